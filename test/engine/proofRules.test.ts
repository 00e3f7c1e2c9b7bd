import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { claimTransaction, createEngine } from '../../src/engine/index.ts';
import { proofExcess } from '../../src/engine/match.ts';
import { ConflictError } from '../../src/internal/errors.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { insertTransfer, newEvmWallet, newMerchant, newSession, setHead, statusOf } from '../helpers/engine.ts';

/**
 * The engine's rules for a payer's proof (issue 24): a proof never takes a transfer that is
 * exactly another open session's due amount, with no exception for "what the claiming session
 * still misses", and never binds more than the claiming session owes plus the merchant's
 * tolerance; whether the proof comes before the ingester stored the transfer, after it stored it
 * but before matching, or after matching left it unmatched.
 */
const db = useTestDatabase('engine_proof_rules');
const logger = pino({ level: 'silent' });
const engine = () => createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
const chain = 'polygon' as const;
const livemode = true;
let nextTx = 0;
const txHash = () => `0x${(++nextTx).toString(16).padStart(4, '0').repeat(16)}`;

async function nextBase(): Promise<bigint> {
  const { rows } = await db.store.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}

const claim = (sessionId: string, hash: string) => db.store.transaction((sql) => claimTransaction(sql, { sessionId, chain, txHash: hash, source: 'proof' }));

async function transferOf(hash: string) {
  const { rows } = await db.store.query<{ session_id: string | null; match_method: string | null }>(
    'SELECT session_id, match_method FROM transfers WHERE tx_hash = $1',
    [hash],
  );
  return rows[0];
}

/** The top-up trick's stage: an attacker's 25 USDC session paid 15 by proof, so it misses exactly 10; a victim's 10 USDC order on the same wallet. */
async function topUpStage() {
  const e = engine();
  const merchantId = await newMerchant(db.store, { toleranceBps: 0 });
  const wallet = newEvmWallet();
  const victim = await newSession(db.store, { merchantId, wallet, amount: '10' });
  const attacker = await newSession(db.store, { merchantId, wallet, amount: '25' });
  // Unique due amounts: the later 25 USDC session is not 25.000000, the victim's is 10.000000.
  expect(victim.amountDue).toBe(10_000_000n);
  const base = await nextBase();
  const own = txHash();
  await insertTransfer(db.store, { to: wallet, amount: 15_000_000n, block: base, txHash: own });
  await claim(attacker.id, own);
  await setHead(db.store, { head: base });
  await e.reconcile({ chain, livemode });
  expect(await transferOf(own)).toMatchObject({ session_id: attacker.id, match_method: 'claim' });
  return { e, wallet, victim, attacker, base };
}

describe('a proof never takes another open session’s exact due amount', () => {
  test('claimed before the ingester stored it: the victim gets its transfer by amount and the claim is refused', async () => {
    const { e, wallet, victim, attacker, base } = await topUpStage();
    const hash = txHash();
    await claim(attacker.id, hash);
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 1n, txHash: hash });
    await setHead(db.store, { head: base + 1n });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(hash)).toMatchObject({ session_id: victim.id, match_method: 'amount' });
    expect(await statusOf(db.store, attacker.id)).toMatchObject({ amount_received: '15000000' });
  });

  test('stored, before matching looked at it: refused at once (409), nothing written', async () => {
    const { wallet, victim, attacker, base } = await topUpStage();
    const hash = txHash();
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 1n, txHash: hash });
    await expect(claim(attacker.id, hash)).rejects.toThrow(/cannot be claimed for this session: its amount pays another payment session/);
    expect(await transferOf(hash)).toMatchObject({ session_id: null });
    expect((await db.store.query('SELECT 1 FROM transaction_claims WHERE tx_hash = $1', [hash])).rowCount).toBe(0);
    expect(await statusOf(db.store, victim.id)).toMatchObject({ status: 'created' });
  });
});

describe('a proof binds no more than the session owes plus the tolerance', () => {
  test('a 1,000 USDC transfer matching left unmatched is refused for a 1 USDC session (409), nothing written', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store, { toleranceBps: 100 });
    const wallet = newEvmWallet();
    const small = await newSession(db.store, { merchantId, wallet, amount: '1' });
    // Another open session keeps amount matching from giving the big transfer to the small one as its sole candidate.
    await newSession(db.store, { merchantId, wallet, amount: '3' });
    const base = await nextBase();
    const hash = txHash();
    await insertTransfer(db.store, { to: wallet, amount: 1_000_000_000n, block: base, txHash: hash });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(hash)).toMatchObject({ session_id: null });
    const refused = await claim(small.id, hash).catch((error) => error);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused.message).toMatch(/moves 1000000000 base units, more than this session still owes \(1000000\)/);
    expect(await transferOf(hash)).toMatchObject({ session_id: null });
    expect(await statusOf(db.store, small.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test('up to what is owed plus the tolerance is bound; a second proof past it is refused', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store, { toleranceBps: 100 });
    const wallet = newEvmWallet();
    const session = await newSession(db.store, { merchantId, wallet, amount: '10' });
    await newSession(db.store, { merchantId, wallet, amount: '30' });
    const base = await nextBase();
    const first = txHash();
    await insertTransfer(db.store, { to: wallet, amount: 6_000_000n, block: base, txHash: first });
    await claim(session.id, first);
    // Owes 4 now; 1% of 10 is 0.1: 4.1 is the most a proof may add.
    const within = txHash();
    await insertTransfer(db.store, { to: wallet, amount: 4_100_000n, block: base + 1n, txHash: within });
    expect((await claim(session.id, within)).transferIds).toHaveLength(1);
    const past = txHash();
    await insertTransfer(db.store, { to: wallet, amount: 1n, block: base + 2n, txHash: past });
    await expect(claim(session.id, past)).rejects.toThrow(/more than this session still owes \(0\)/);
    await setHead(db.store, { head: base + 2n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ amount_received: '10100000' });
  });

  test('proofExcess() is exact to the base unit', () => {
    const session = { amountDue: 10_000_000n, received: 9_000_000n, toleranceBps: 50 };
    expect(proofExcess(session, 1_050_000n)).toBeUndefined();
    expect(proofExcess(session, 1_050_001n)).toMatch(/moves 1050001 base units/);
    expect(proofExcess({ ...session, received: 10_040_000n }, 10_000n)).toBeUndefined();
    expect(proofExcess({ ...session, received: 10_040_000n }, 10_001n)).toMatch(/still owes \(0\)/);
    expect(proofExcess({ ...session, received: 12_000_000n }, 1n)).toBeDefined();
  });
});
