import { createSecretBox, loadOrCreateEncryptionKey } from '../../internal/crypto.ts';
import {
  addWallet,
  createMerchant,
  getMerchant,
  getMerchantSettings,
  listMerchants,
  listWallets,
  MAX_PAYMENT_TOLERANCE_BPS,
  recordAudit,
  setMerchantPaymentSettings,
  setMerchantBrand,
  setMerchantLogo,
  removeMerchantLogo,
  type BrandChange,
} from '../../accounts/index.ts';
import { readFileSync } from 'node:fs';
import { auditWallet } from './wallets.ts';
import { setMerchantRateLimits } from '../../api/rateLimits.ts';
import { emit, jsonOption, operatorOf, parseWallet, requireString, UsageError, withStore, type Command } from '../command.ts';

/** `svc merchants create`: a merchant, its two webhook signing secrets (printed once) and any wallets, verified by the operator. */
export const merchantsCreate: Command = {
  summary: 'create a merchant (prints its live and sandbox webhook signing secrets once)',
  usage: 'svc merchants create --name NAME [--wallet CHAIN:ADDRESS …] [--json]',
  options: {
    name: { type: 'string', description: 'display name shown on checkout pages' },
    wallet: {
      type: 'string',
      multiple: true,
      description: 'a receiving wallet, e.g. polygon:0xAbc…; verified by the operator, not a default (svc wallets default)',
    },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const name = requireString(values, 'name');
    if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
    const wallets = ((values.wallet as string[] | undefined) ?? []).map(parseWallet);
    return withStore(io, async (store, { config }) => {
      const box = createSecretBox(loadOrCreateEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
      const created = await store.transaction(async (sql) => {
        const { merchant, webhookSecrets } = await createMerchant(sql, box, { name });
        const actor = operatorOf(io);
        await recordAudit(sql, { merchantId: merchant.id, actor, action: 'merchant.created', target: merchant.id, details: { name } });
        const added = [];
        for (const wallet of wallets) {
          const made = await addWallet(sql, { merchantId: merchant.id, ...wallet, verifiedBy: 'operator' });
          await auditWallet(sql, actor, 'wallet.added', made, { method: made.verificationMethod });
          added.push(made);
        }
        return { merchant, webhookSecrets, wallets: added };
      });
      emit(
        io,
        json,
        created,
        [
          `Created merchant ${created.merchant.id} (${created.merchant.name})`,
          `  live webhook signing secret (shown once):    ${created.webhookSecrets.live}`,
          `  sandbox webhook signing secret (shown once): ${created.webhookSecrets.sandbox}`,
          ...created.wallets.map((wallet) => `  wallet ${wallet.chain}:${wallet.address} (verified by operator)`),
        ].join('\n'),
      );
      return 0;
    });
  },
};

/** `svc merchants list`: every merchant with its wallets. */
export const merchantsList: Command = {
  summary: 'list merchants',
  usage: 'svc merchants list [--json]',
  options: { ...jsonOption },
  async run({ io, json }) {
    return withStore(io, async (store) => {
      const merchants = await listMerchants(store);
      const withWallets = await Promise.all(
        merchants.map(async (merchant) => ({ ...merchant, wallets: await listWallets(store, { merchantId: merchant.id }) })),
      );
      emit(
        io,
        json,
        withWallets,
        withWallets.length === 0
          ? 'No merchants yet'
          : withWallets
              .map(
                (m) =>
                  `${m.id}  ${m.name}  created ${m.createdAt.toISOString()}${m.wallets.map((w) => `\n    ${w.chain}:${w.address}${w.verified ? '' : ' (unverified)'}${w.isDefault ? ' (default)' : ''}`).join('')}`,
              )
              .join('\n'),
      );
      return 0;
    });
  },
};

/** A `--…-per-minute` value: a limit, `null` for "default", undefined when not given. */
function perMinuteLimit(values: Record<string, unknown>, name: string): number | null | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1_000_000)
    throw new UsageError(`--${name} must be a whole number from 1 to 1000000, or "default"`);
  return Number(raw);
}

/** A brand option: undefined when not given, null for "none" (cleared), else the text. */
function brandOption(values: Record<string, unknown>, name: string): string | null | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  return raw === 'none' ? null : String(raw);
}

/** `svc merchants update`: the settings only an operator changes (rate limits, bridged tokens, tolerance), and the brand. */
export const merchantsUpdate: Command = {
  summary: 'change a merchant’s settings: rate limits, bridged tokens, payment tolerance, default attribution, brand (name, colour, support, logo)',
  usage:
    'svc merchants update --merchant ID [--create-per-minute N] [--read-per-minute N] [--write-per-minute N] [--accept-bridged true|false] [--tolerance-bps N] [--attribution amount|address] [--name NAME] [--accent-color #rrggbb|none] [--support-email EMAIL|none] [--support-url URL|none] [--logo FILE|none] [--json]',
  options: {
    name: { type: 'string', description: 'display name shown to customers on checkout pages and receipts' },
    'accent-color': { type: 'string', description: 'accent colour #rrggbb; "none" clears it' },
    'support-email': { type: 'string', description: 'support email shown to customers; "none" clears it' },
    'support-url': { type: 'string', description: 'support page (https) shown to customers; "none" clears it' },
    logo: { type: 'string', description: 'a PNG, JPEG or WebP file (at most 256 KiB, 2048×2048 px); "none" removes the logo' },
    merchant: { type: 'string', description: 'merchant id (mer_…)' },
    'create-per-minute': { type: 'string', description: 'payment creations per key per minute (spec default 10); "default" resets' },
    'read-per-minute': { type: 'string', description: 'reads per key per minute (spec default 30); "default" resets' },
    'write-per-minute': { type: 'string', description: 'other writes per key per minute (default 30); "default" resets' },
    'accept-bridged': { type: 'string', description: 'accept bridged tokens (USDC.e, …) where a chain lists them: true or false' },
    'tolerance-bps': { type: 'string', description: 'payment tolerance in basis points of the due amount, 0 to 1000 (default 0: the full amount must arrive)' },
    attribution: {
      type: 'string',
      description:
        'default attribution of new sessions and links: amount (a unique amount on the shared wallet) or address (a deposit address per payment; EVM chains, solana keeps references)',
    },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const attribution = values.attribution;
    if (attribution !== undefined && attribution !== 'amount' && attribution !== 'address') throw new UsageError('--attribution must be amount or address');
    const limits = {
      create: perMinuteLimit(values, 'create-per-minute'),
      read: perMinuteLimit(values, 'read-per-minute'),
      write: perMinuteLimit(values, 'write-per-minute'),
    };
    const bridged = values['accept-bridged'];
    if (bridged !== undefined && bridged !== 'true' && bridged !== 'false') throw new UsageError('--accept-bridged must be true or false');
    const tolerance = values['tolerance-bps'];
    if (tolerance !== undefined && !(typeof tolerance === 'string' && /^\d+$/.test(tolerance) && Number(tolerance) <= MAX_PAYMENT_TOLERANCE_BPS))
      throw new UsageError(`--tolerance-bps must be a whole number from 0 to ${MAX_PAYMENT_TOLERANCE_BPS}`);
    const brand: BrandChange = {
      ...(values.name !== undefined ? { name: String(values.name) } : {}),
      ...(brandOption(values, 'accent-color') !== undefined ? { accentColor: brandOption(values, 'accent-color') } : {}),
      ...(brandOption(values, 'support-email') !== undefined ? { supportEmail: brandOption(values, 'support-email') } : {}),
      ...(brandOption(values, 'support-url') !== undefined ? { supportUrl: brandOption(values, 'support-url') } : {}),
    };
    const logoOption = brandOption(values, 'logo');
    let logo: Buffer | null | undefined = logoOption === null ? null : undefined;
    if (typeof logoOption === 'string') {
      try {
        logo = readFileSync(logoOption);
      } catch {
        throw new UsageError(`--logo ${logoOption} cannot be read`);
      }
    }
    return withStore(io, async (store) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const settings = await store.transaction(async (sql) => {
        // The brand: checked as the API and dashboard check it (a bad value is a usage error, nothing changes), audited.
        const actor = operatorOf(io);
        if (Object.keys(brand).length > 0) {
          const { changed } = await setMerchantBrand(sql, merchantId, brand, { livemode: true });
          if (Object.keys(changed).length > 0)
            await recordAudit(sql, { merchantId, actor, action: 'merchant.brand_changed', target: merchantId, livemode: null, details: changed });
        }
        if (logo === null && (await removeMerchantLogo(sql, merchantId)))
          await recordAudit(sql, { merchantId, actor, action: 'merchant.logo_removed', target: merchantId, livemode: null });
        if (logo) {
          const stored = await setMerchantLogo(sql, merchantId, logo);
          const details = { contentType: stored.contentType, width: stored.width, height: stored.height, bytes: stored.size, sha256: stored.sha256 };
          await recordAudit(sql, { merchantId, actor, action: 'merchant.logo_set', target: merchantId, livemode: null, details });
        }
        if (Object.values(limits).some((value) => value !== undefined)) {
          await setMerchantRateLimits(sql, {
            merchantId,
            ...(limits.create !== undefined ? { create: limits.create } : {}),
            ...(limits.read !== undefined ? { read: limits.read } : {}),
            ...(limits.write !== undefined ? { write: limits.write } : {}),
          });
        }
        const payment = {
          ...(bridged !== undefined ? { acceptBridgedTokens: bridged === 'true' } : {}),
          ...(tolerance !== undefined ? { paymentToleranceBps: Number(tolerance) } : {}),
          ...(attribution !== undefined ? { defaultAttribution: attribution } : {}),
        };
        await setMerchantPaymentSettings(sql, merchantId, payment);
        // What was asked for (a rate limit of null: back to the default), as the dashboard records its settings.
        const rateLimits = Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined));
        await recordAudit(sql, {
          merchantId,
          actor: operatorOf(io),
          action: 'merchant.settings_changed',
          target: merchantId,
          livemode: null,
          details: { ...payment, ...(Object.keys(rateLimits).length > 0 ? { ratePerMinute: rateLimits } : {}) },
        });
        return (await getMerchantSettings(sql, merchantId))!;
      });
      emit(
        io,
        json,
        settings,
        `Merchant ${merchantId}: bridged tokens ${settings.acceptBridgedTokens ? 'accepted' : 'refused'}, tolerance ${String(settings.paymentToleranceBps)} bps, attribution ${settings.defaultAttribution}, ` +
          `limits per key per minute: create ${String(settings.createPerMinute ?? 'default')}, read ${String(settings.readPerMinute ?? 'default')}, write ${String(settings.writePerMinute ?? 'default')}`,
      );
      return 0;
    });
  },
};
