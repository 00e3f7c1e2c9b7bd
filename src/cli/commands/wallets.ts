import type { ChainName } from '../../internal/config.ts';
import { canonicalAddress } from '../../internal/addresses.ts';
import type { Store } from '../../store/index.ts';
import {
  addWallet,
  getMerchant,
  listWallets,
  recordAudit,
  removeWallet,
  setDefaultWallet,
  type Actor,
  type AuditAction,
  type Wallet,
} from '../../accounts/index.ts';
import type { Sql } from '../../store/index.ts';
import { emit, jsonOption, operatorOf, parseWallet, requireString, UsageError, withStore, type Command } from '../command.ts';

/** The audit entry of a wallet change (wallets have no mode: livemode null, as the dashboard and the API record them). */
export function auditWallet(sql: Sql, actor: Actor, action: AuditAction, wallet: Wallet, extra: Record<string, unknown> = {}): Promise<void> {
  return recordAudit(sql, {
    merchantId: wallet.merchantId,
    actor,
    action,
    target: wallet.id,
    livemode: null,
    details: { chain: wallet.chain, address: wallet.address, ...extra },
  });
}

/** The merchant's wallet at CHAIN:ADDRESS (in any form the API accepts), or a usage error naming what is missing. */
async function findWallet(store: Store, merchantId: string, given: { chain: ChainName; address: string }) {
  if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
  const canonical = canonicalAddress(given.chain, given.address);
  const wallet = (await listWallets(store, { merchantId, chain: given.chain })).find((candidate) => candidate.address === canonical);
  if (!wallet)
    throw new UsageError(
      `merchant ${merchantId} has no wallet ${given.chain}:${given.address}; add it with svc wallets add (--default to make it the default)`,
    );
  return wallet;
}

const walletOptions = {
  merchant: { type: 'string', description: 'merchant id (mer_…)' },
  wallet: { type: 'string', description: 'CHAIN:ADDRESS of one of its wallets' },
  ...jsonOption,
} as const;

/** `svc wallets add`: a receiving wallet the operator vouches for, optionally its chain's default. */
export const walletsAdd: Command = {
  summary: 'add a receiving wallet to a merchant, verified by the operator (--default: live payments without merchantWallet pay it)',
  usage: 'svc wallets add --merchant ID --wallet CHAIN:ADDRESS [--default] [--json]',
  options: {
    merchant: { type: 'string', description: 'merchant id (mer_…)' },
    wallet: { type: 'string', description: 'CHAIN:ADDRESS' },
    default: { type: 'boolean', description: 'make it the default wallet of its chain (replaces the previous default)' },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const wallet = parseWallet(requireString(values, 'wallet'));
    return withStore(io, async (store) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const added = await store.transaction(async (sql) => {
        const made = await addWallet(sql, { merchantId, ...wallet, verifiedBy: 'operator', makeDefault: values.default === true });
        await auditWallet(sql, operatorOf(io), 'wallet.added', made, { method: made.verificationMethod });
        if (made.isDefault) await auditWallet(sql, operatorOf(io), 'wallet.default_set', made);
        return made;
      });
      emit(io, json, added, `Wallet ${added.id}: ${added.chain}:${added.address} (verified by operator${added.isDefault ? ', default' : ''})`);
      return 0;
    });
  },
};

/** `svc wallets default`: the wallet live payments without `merchantWallet` pay on its chain. */
export const walletsDefault: Command = {
  summary: 'make a verified wallet of a merchant the default of its chain',
  usage: 'svc wallets default --merchant ID --wallet CHAIN:ADDRESS [--json]',
  options: walletOptions,
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const given = parseWallet(requireString(values, 'wallet'));
    return withStore(io, async (store) => {
      const wallet = await findWallet(store, merchantId, given);
      const updated = await store.transaction(async (sql) => {
        const chosen = await setDefaultWallet(sql, { merchantId, walletId: wallet.id });
        await auditWallet(sql, operatorOf(io), 'wallet.default_set', chosen);
        return chosen;
      });
      emit(io, json, updated, `Wallet ${updated.id}: ${updated.chain}:${updated.address} is now the default on ${updated.chain}`);
      return 0;
    });
  },
};

/** `svc wallets remove`: refused (by the accounts module) while open live sessions or active links use the wallet. */
export const walletsRemove: Command = {
  summary: 'remove a receiving wallet (refused while open live sessions or active links use it)',
  usage: 'svc wallets remove --merchant ID --wallet CHAIN:ADDRESS [--json]',
  options: walletOptions,
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const given = parseWallet(requireString(values, 'wallet'));
    return withStore(io, async (store) => {
      const wallet = await findWallet(store, merchantId, given);
      const removed = await store.transaction(async (sql) => {
        const gone = await removeWallet(sql, { merchantId, walletId: wallet.id });
        await auditWallet(sql, operatorOf(io), 'wallet.removed', gone, { wasDefault: gone.isDefault });
        return gone;
      });
      emit(
        io,
        json,
        { ...removed, deleted: true },
        `Removed wallet ${removed.id}: ${removed.chain}:${removed.address}${removed.isDefault ? ` (${removed.chain} has no default wallet now)` : ''}`,
      );
      return 0;
    });
  },
};
