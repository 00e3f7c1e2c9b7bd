import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AccountRole, address, generateKeyPairSigner, type Address, type Instruction, type KeyPairSigner } from '@solana/kit';
import { getCreateAssociatedTokenIdempotentInstruction, getTransferCheckedInstruction } from '@solana-program/token';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import type { Engine } from '../../../src/engine/index.ts';
import { createSession } from '../../../src/payments/sessions.ts';
import type { SolanaIngester } from '../../../src/ingest/solana/index.ts';
import { createSolanaMerchant, startIngesterWithEngine, transfersOf, waitFor, type TransferRow } from '../../helpers/solanaIngest.ts';

// Review findings 5 and 6: a Solana Pay reference the paying transaction carries on another
// instruction than the transfer, and a failed first payment into the ATA it was creating. The
// real ingester and engine against the litesvm-backed test RPC.
const db = useTestDatabase('solana_references');
let rpc: SolanaTestRpc;
let ingester: SolanaIngester;
let engine: Engine;
let stop: (() => Promise<void>) | undefined;
let payer: KeyPairSigner;
const merchants: { merchantId: string; wallet: KeyPairSigner }[] = [];

beforeAll(async () => {
  rpc = await startSolanaRpc();
  for (let i = 0; i < 7; i += 1) merchants.push(await createSolanaMerchant(db.store, rpc));
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10_000_000_000n);
  rpc.ledger.finalize();
  ({ ingester, engine, stop } = await startIngesterWithEngine({ store: db.store, rpc }));
});

afterAll(async () => {
  await stop?.();
  await rpc?.stop();
});

async function newSession(merchantId: string, amount: string) {
  return db.store.transaction((sql) =>
    createSession(sql, { merchantId, livemode: true, amount, currency: 'USDC', chain: 'solana', monitorWindowSeconds: 3600 }),
  );
}

async function matched(signature: string): Promise<TransferRow> {
  return waitFor(async () => {
    const [row] = await transfersOf(db.store, signature);
    return row?.session_id ? row : undefined;
  }, `transfer ${signature} to be matched`);
}

async function stored(signature: string, count = 1): Promise<TransferRow[]> {
  return waitFor(async () => {
    const rows = await transfersOf(db.store, signature);
    return rows.length >= count ? rows : undefined;
  }, `${count} transfer(s) of ${signature}`);
}

/** CreateAssociatedTokenIdempotent for `owner`'s USDC account, with `extra` read-only keys appended (a wallet putting the reference there). */
async function createAta(owner: Address, extra: Address[] = []): Promise<Instruction> {
  const create = getCreateAssociatedTokenIdempotentInstruction({ payer, ata: await rpc.ata(owner, 'USDC'), owner, mint: rpc.mints.USDC });
  return { ...create, accounts: [...create.accounts, ...extra.map((key) => ({ address: key, role: AccountRole.READONLY }))] };
}

async function transferChecked(to: Address, amount: bigint, extra: Address[] = []): Promise<Instruction> {
  const transfer = getTransferCheckedInstruction({
    source: await rpc.ata(payer.address, 'USDC'),
    mint: rpc.mints.USDC,
    destination: await rpc.ata(to, 'USDC'),
    authority: payer,
    amount,
    decimals: 6,
  });
  return { ...transfer, accounts: [...transfer.accounts, ...extra.map((key) => ({ address: key, role: AccountRole.READONLY }))] };
}

describe('finding 5: a reference the transaction carries on another instruction', () => {
  test('a reference on the createATA instruction (the TransferChecked has none) is stored and matches its session, an underpayment included', async () => {
    const { merchantId, wallet } = merchants[0]!;
    const created = await newSession(merchantId, '5');
    const reference = address(created.reference!);
    const paid = await rpc.send(payer, [await createAta(wallet.address, [reference]), await transferChecked(wallet.address, 2_000_000n)]);
    expect(paid.meta.err).toBeNull();
    expect(paid.accountKeys).toContain(reference);
    const row = await matched(paid.signature);
    expect(row).toMatchObject({ reference_keys: [reference], session_id: created.id, match_method: 'reference', amount: '2000000' });
  });

  test('v0: a reference loaded read-only from a lookup table, on the createATA instruction, matches its session', async () => {
    const { merchantId, wallet } = merchants[1]!;
    const created = await newSession(merchantId, '3.5');
    const reference = address(created.reference!);
    const table = await rpc.lookupTable([reference]);
    const paid = await rpc.send(payer, [await createAta(wallet.address, [reference]), await transferChecked(wallet.address, 1_000_000n)], 0, {
      [table]: [reference],
    });
    expect(paid.meta.err).toBeNull();
    expect((paid.meta.loadedAddresses as { readonly: string[] }).readonly).toEqual([reference]);
    expect(await matched(paid.signature)).toMatchObject({ reference_keys: [reference], session_id: created.id, match_method: 'reference' });
  });

  test("the transfer instruction's own references win over keys on other instructions", async () => {
    const { merchantId, wallet } = merchants[2]!;
    const created = await newSession(merchantId, '7');
    const other = (await generateKeyPairSigner()).address;
    const reference = address(created.reference!);
    const paid = await rpc.send(payer, [await createAta(wallet.address, [other]), await transferChecked(wallet.address, 7_000_000n, [reference])]);
    expect(await matched(paid.signature)).toMatchObject({ reference_keys: [reference], session_id: created.id, match_method: 'reference' });
  });

  test("one transaction paying two wallets: another transfer's reference is not taken for the credit that has none, which is matched by amount", async () => {
    const first = merchants[3]!;
    const second = merchants[4]!;
    const firstSession = await newSession(first.merchantId, '11');
    const secondSession = await newSession(second.merchantId, '12');
    const reference = address(firstSession.reference!);
    const paid = await rpc.send(payer, [
      await createAta(first.wallet.address),
      await createAta(second.wallet.address),
      await transferChecked(first.wallet.address, 11_000_000n, [reference]),
      await transferChecked(second.wallet.address, BigInt(secondSession.amountDue)),
    ]);
    expect(paid.meta.err).toBeNull();
    await stored(paid.signature, 2);
    await waitFor(async () => (await transfersOf(db.store, paid.signature)).every((row) => row.session_id) || undefined, 'both matched');
    const rows = await transfersOf(db.store, paid.signature);
    const byOwner = new Map(rows.map((row) => [row.to_address, row]));
    expect(byOwner.get(first.wallet.address)).toMatchObject({ reference_keys: [reference], session_id: firstSession.id, match_method: 'reference' });
    expect(byOwner.get(second.wallet.address)).toMatchObject({ reference_keys: [], session_id: secondSession.id, match_method: 'amount' });
  });
});

describe('finding 6: a failed first payment into the ATA the same transaction was creating', () => {
  test('createATA + TransferChecked from a payer short of funds: one failed transfer of the attempted amount, never counted', async () => {
    const { merchantId, wallet } = merchants[5]!;
    const created = await newSession(merchantId, '2');
    const poor = await rpc.wallet();
    await rpc.fund(poor.address, 'USDC', 1_000n);
    const paid = await rpc.pay({ from: poor, to: wallet.address, currency: 'USDC', amount: 2_000_000n, references: [address(created.reference!)] });
    expect(paid.meta.err).not.toBeNull();
    // The rolled-back ATA has no token balance entry in the transaction.
    const ata = await rpc.ata(wallet.address, 'USDC');
    const index = paid.accountKeys.indexOf(ata);
    expect((paid.meta.postTokenBalances as { accountIndex: number }[]).some((balance) => balance.accountIndex === index)).toBe(false);
    const [row] = await stored(paid.signature);
    expect(row).toEqual({
      tx_hash: paid.signature,
      log_index: index,
      block_number: paid.slot,
      token_address: rpc.mints.USDC,
      from_address: poor.address,
      to_address: wallet.address,
      amount: '2000000',
      reference_keys: [created.reference],
      status: 'failed',
      session_id: null,
      match_method: null,
    });
    const { rows } = await db.store.query('SELECT failed FROM solana_signatures WHERE signature = $1', [paid.signature]);
    expect(rows).toEqual([{ failed: true }]);
    rpc.ledger.finalize();
    await engine.idle();
    const { rows: sessions } = await db.store.query<{ status: string; amount_received: string }>(
      'SELECT status, amount_received::text FROM payment_sessions WHERE id = $1',
      [created.id],
    );
    expect(sessions[0]).toMatchObject({ amount_received: '0' });
  });

  test('createATA + (unchecked) Transfer: the mint comes from the createATA instruction', async () => {
    const { wallet } = merchants[6]!;
    const poor = await rpc.wallet();
    await rpc.fund(poor.address, 'USDC', 1_000n);
    const paid = await rpc.pay({ from: poor, to: wallet.address, currency: 'USDC', amount: 3_000_000n, checked: false });
    expect(paid.meta.err).not.toBeNull();
    const [row] = await stored(paid.signature);
    expect(row).toMatchObject({ token_address: rpc.mints.USDC, to_address: wallet.address, amount: '3000000', status: 'failed', reference_keys: [] });
  });
});
