import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { getBase58Decoder } from '@solana/kit';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { claimTransaction, createEngine } from '../../src/engine/index.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { ConflictError } from '../../src/internal/errors.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { eventsOf, insertTransfer, newEvmWallet, newMerchant, newSession, setHead, statusOf } from '../helpers/engine.ts';

const db = useTestDatabase('engine_claims');
const logger = pino({ level: 'silent' });
const engine = () => createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
const chain = 'polygon' as const;
const livemode = true;

async function nextBase(): Promise<bigint> {
  const { rows } = await db.store.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}

/** Two sessions of the same merchant and wallet asking for 10 USDC, tolerance 1%: 9.99 pays either, so amount matching cannot tell which. */
async function twoLookAlikes() {
  const merchantId = await newMerchant(db.store, { toleranceBps: 100 });
  const wallet = newEvmWallet();
  const first = await newSession(db.store, { merchantId, wallet, amount: '10' });
  const second = await newSession(db.store, { merchantId, wallet, amount: '10' });
  return { merchantId, wallet, first, second, base: await nextBase() };
}

const claim = (sessionId: string, txHash: string, source: 'proof' | 'x402' = 'proof') =>
  db.store.transaction((sql) => claimTransaction(sql, { sessionId, chain, txHash, source }));

async function transferOf(txHash: string) {
  const { rows } = await db.store.query(
    'SELECT session_id, match_method, EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id) AS undecided FROM transfers t WHERE tx_hash = $1',
    [txHash],
  );
  return rows[0] as { session_id: string | null; match_method: string | null; undecided: boolean };
}

async function claimOf(txHash: string) {
  const { rows } = await db.store.query('SELECT session_id, source, refused_reason FROM transaction_claims WHERE tx_hash = $1', [txHash]);
  return rows[0] as { session_id: string; source: string; refused_reason: string | null } | undefined;
}

describe('claimTransaction() on a transfer already stored', () => {
  test('an unmatched transfer is bound to the claiming session at once and the session walks the normal path to confirmed', async () => {
    const e = engine();
    const { wallet, first, second, base } = await twoLookAlikes();
    const { id, txHash } = await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(txHash)).toMatchObject({ session_id: null });

    const result = await claim(second.id, txHash.toUpperCase().replace('0X', '0x'));
    expect(result).toMatchObject({ txHash, created: true, transferIds: [id], sessionStatus: 'confirming' });
    expect(result.changes.map((change) => change.to)).toEqual(['confirming']);
    expect(await transferOf(txHash)).toMatchObject({ session_id: second.id, match_method: 'claim' });
    expect(await claimOf(txHash)).toMatchObject({ session_id: second.id, source: 'proof', refused_reason: null });

    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, second.id)).toMatchObject({ status: 'confirmed', amount_received: '9990000' });
    expect(await eventsOf(db.store, second.id)).toEqual(['payment.confirming', 'payment.confirmed']);
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'created' });
  });

  test('claiming again for the same session is idempotent; for another session it is refused and nothing changes', async () => {
    const { wallet, first, second, base } = await twoLookAlikes();
    const { id, txHash } = await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base });
    await setHead(db.store, { head: base });
    await claim(second.id, txHash);
    const again = await claim(second.id, txHash);
    expect(again).toMatchObject({ created: false, transferIds: [id], changes: [], sessionStatus: 'confirming' });
    await expect(claim(first.id, txHash)).rejects.toThrow(/already claimed by another payment session/);
    expect(await claimOf(txHash)).toMatchObject({ session_id: second.id });
    expect(await eventsOf(db.store, first.id)).toEqual([]);
  });

  test('a transfer already matched to another session by amount is refused', async () => {
    const e = engine();
    const { wallet, first, second, base } = await twoLookAlikes();
    const { txHash } = await insertTransfer(db.store, { to: wallet, amount: first.amountDue, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    await expect(claim(second.id, txHash)).rejects.toThrow(/already pays another payment session/);
    expect(await claimOf(txHash)).toBeUndefined();
    expect(await transferOf(txHash)).toMatchObject({ session_id: first.id, match_method: 'amount' });
  });

  test('a hostile proof for a transfer not matched yet that pays exactly another session loses to the amount: refused, nothing written', async () => {
    const { wallet, first, second, base } = await twoLookAlikes();
    const { txHash } = await insertTransfer(db.store, { to: wallet, amount: first.amountDue, block: base });
    await setHead(db.store, { head: base });
    // The claimant learns that another session has it, never which one (a session id is its checkout's capability).
    await expect(claim(second.id, txHash)).rejects.toThrow(`transaction ${txHash} cannot be claimed for this session: its amount pays another payment session`);
    expect(await claimOf(txHash)).toBeUndefined();
    expect(await transferOf(txHash)).toMatchObject({ session_id: null, undecided: true });
  });

  test("a proof from another merchant's session on the same unverified address yields to the exact due amount too", async () => {
    // A merchant receives on an inline, unverified merchantWallet; another merchant (anyone with a
    // live key) opens a session on the same address. Two merchants on one address switch amount
    // matching off (the amount cannot say whose money it is), which must not switch off the
    // exact-amount protection against a copied hash.
    const victim = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const paid = await newSession(db.store, { merchantId: victim, wallet, amount: '10' });
    const attacker = await newMerchant(db.store);
    const hijacker = await newSession(db.store, { merchantId: attacker, wallet, amount: '25' });
    const base = await nextBase();
    const { txHash } = await insertTransfer(db.store, { to: wallet, amount: paid.amountDue, block: base });
    await setHead(db.store, { head: base });
    await expect(claim(hijacker.id, txHash)).rejects.toThrow(
      `transaction ${txHash} cannot be claimed for this session: its amount pays another payment session`,
    );
    expect(await claimOf(txHash)).toBeUndefined();
    expect(await transferOf(txHash)).toMatchObject({ session_id: null });
    expect(await statusOf(db.store, hijacker.id)).toMatchObject({ status: 'created' });
    // The payer of the session it pays can still prove it.
    expect(await claim(paid.id, txHash)).toMatchObject({ created: true, sessionStatus: 'confirming' });
  });

  test("on an address its owner verified, the other merchant's session outranks no proof, and its own proofs still yield to the owner's exact due amount", async () => {
    const owner = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const ownerExact = await newSession(db.store, { merchantId: owner, wallet, amount: '10' });
    const ownerProved = await newSession(db.store, { merchantId: owner, wallet, amount: '40' });
    const other = await newMerchant(db.store);
    const others = await newSession(db.store, { merchantId: other, wallet, amount: '25' });
    await addWallet(db.store, { merchantId: owner, chain, address: wallet, verifiedBy: 'operator' });
    const base = await nextBase();
    // The owner's customer paid the other session's due amount by mistake and proves it: that
    // session never takes a transfer by amount here, so it does not stand in the way.
    const mistaken = await insertTransfer(db.store, { to: wallet, amount: others.amountDue, block: base });
    // A proof for the other merchant's session is refused on the owner's verified address.
    const exact = await insertTransfer(db.store, { to: wallet, amount: ownerExact.amountDue, block: base + 1n });
    await setHead(db.store, { head: base + 1n });
    expect(await claim(ownerProved.id, mistaken.txHash)).toMatchObject({ created: true, sessionStatus: 'confirming' });
    expect(await transferOf(mistaken.txHash)).toMatchObject({ session_id: ownerProved.id, match_method: 'claim' });
    await expect(claim(others.id, exact.txHash)).rejects.toThrow(
      `transaction ${exact.txHash} cannot be claimed for this session: its wallet is verified by another account`,
    );
    expect(await claimOf(exact.txHash)).toBeUndefined();
    await engine().reconcile({ chain, livemode });
    expect(await transferOf(exact.txHash)).toMatchObject({ session_id: ownerExact.id, match_method: 'amount' });
    expect(await statusOf(db.store, others.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test("a proof for the other merchant's session on an address its owner verified is refused, stored or not; the owner's transfer stays the owner's", async () => {
    const owner = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const other = await newMerchant(db.store);
    const others = await newSession(db.store, { merchantId: other, wallet, amount: '25' });
    await addWallet(db.store, { merchantId: owner, chain, address: wallet, verifiedBy: 'operator' });
    const base = await nextBase();
    // A transfer the owner's matching left unmatched (no owner session asks for it).
    const stray = await insertTransfer(db.store, { to: wallet, amount: 3_000_000n, block: base });
    await setHead(db.store, { head: base });
    await engine().reconcile({ chain, livemode });
    expect(await transferOf(stray.txHash)).toMatchObject({ session_id: null });
    const refusal = `cannot be claimed for this session: its wallet is verified by another account`;
    await expect(claim(others.id, stray.txHash)).rejects.toThrow(refusal);
    // Nor waiting for a transaction not stored yet.
    await expect(claim(others.id, `0x${'ab'.repeat(32)}`)).rejects.toThrow(refusal);
    expect(await claimOf(stray.txHash)).toBeUndefined();
    expect(await transferOf(stray.txHash)).toMatchObject({ session_id: null });
    expect(await statusOf(db.store, others.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test('a transfer to another wallet, in another token, or paid before the session existed is refused', async () => {
    const { wallet, second, base } = await twoLookAlikes();
    const elsewhere = await insertTransfer(db.store, { to: newEvmWallet(), amount: 9_990_000n, block: base });
    await expect(claim(second.id, elsewhere.txHash)).rejects.toThrow(/does not pay this session: it pays 0x[0-9a-fA-F]{40}, not the session's wallet/);
    const otherToken = await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base, token: newEvmWallet() });
    await expect(claim(second.id, otherToken.txHash)).rejects.toThrow(/which the session does not accept/);
    const old = await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base, blockTime: new Date(Date.now() - 3_600_000) });
    await expect(claim(second.id, old.txHash)).rejects.toThrow(/paid before the session was created/);
    for (const { txHash } of [elsewhere, otherToken, old]) expect(await claimOf(txHash)).toBeUndefined();
  });

  test("an unreadable hash, an unknown session and a chain that is not the session's are refused", async () => {
    const { second } = await twoLookAlikes();
    await expect(claim(second.id, '0x1234')).rejects.toThrow(/is not a transaction hash/);
    await expect(claim('ps_doesnotexist', `0x${'ab'.repeat(32)}`)).rejects.toThrow(/not found/);
    await expect(
      db.store.transaction((sql) => claimTransaction(sql, { sessionId: second.id, chain: 'base', txHash: `0x${'ab'.repeat(32)}`, source: 'proof' })),
    ).rejects.toThrow(/is on polygon, not on base/);
  });
});

describe('a claim made before the ingester stored the transaction', () => {
  test('waits, then the matcher binds the transfer to the claiming session before amount matching', async () => {
    const e = engine();
    const { wallet, first, second, base } = await twoLookAlikes();
    const txHash = `0x${'1c'.repeat(32)}`;
    expect(await claim(second.id, txHash, 'x402')).toMatchObject({ created: true, transferIds: [], changes: [], sessionStatus: 'created' });
    // The amount is exactly the first session's due amount: an x402 settlement is the gateway's own, so the claim wins.
    await insertTransfer(db.store, { to: wallet, amount: first.amountDue, block: base, txHash });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(txHash)).toMatchObject({ session_id: second.id, match_method: 'claim' });
    expect(await statusOf(db.store, second.id)).toMatchObject({ status: 'confirmed' });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'created' });
  });

  test("a proof for the other merchant's session made before the owner verified the address takes no transfer stored after: it waits for the owner", async () => {
    const owner = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const other = await newMerchant(db.store);
    const others = await newSession(db.store, { merchantId: other, wallet, amount: '25' });
    const txHash = `0x${'5d'.repeat(32)}`;
    // Nobody verified the address yet: the proof is taken and waits for the transaction.
    expect(await claim(others.id, txHash, 'proof')).toMatchObject({ created: true, transferIds: [] });
    await addWallet(db.store, { merchantId: owner, chain, address: wallet, verifiedBy: 'operator' });
    const base = await nextBase();
    await insertTransfer(db.store, { to: wallet, amount: others.amountDue, block: base, txHash });
    await setHead(db.store, { head: base });
    await engine().reconcile({ chain, livemode });
    // As a proof made now would be refused (claimTransaction), the waiting one is refused too.
    expect(await transferOf(txHash)).toMatchObject({ session_id: null });
    expect((await claimOf(txHash))?.refused_reason).toMatch(/verified by another account/);
    expect(await statusOf(db.store, others.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test("a payer proof yields to another session's exact due amount; the refusal is recorded on the claim", async () => {
    const e = engine();
    const { wallet, first, second, base } = await twoLookAlikes();
    const txHash = `0x${'2c'.repeat(32)}`;
    await claim(second.id, txHash, 'proof');
    await insertTransfer(db.store, { to: wallet, amount: first.amountDue, block: base, txHash });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(txHash)).toMatchObject({ session_id: first.id, match_method: 'amount' });
    expect((await claimOf(txHash))?.refused_reason).toMatch(new RegExp(`amount names session ${first.id}`));
  });

  test('a payer proof beats the fuzzy rules: a tolerance match of another session goes to the claiming session', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store, { toleranceBps: 100 });
    const wallet = newEvmWallet();
    const ten = await newSession(db.store, { merchantId, wallet, amount: '10' });
    const twenty = await newSession(db.store, { merchantId, wallet, amount: '20' });
    const base = await nextBase();
    // 9.95 is within 1% of the 10 USDC session only (rule 4); the payer proves it for the 20 USDC one.
    const txHash = `0x${'4c'.repeat(32)}`;
    await claim(twenty.id, txHash, 'proof');
    await insertTransfer(db.store, { to: wallet, amount: 9_950_000n, block: base, txHash });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(txHash)).toMatchObject({ session_id: twenty.id, match_method: 'claim' });
    expect(await statusOf(db.store, twenty.id)).toMatchObject({ status: 'pending', amount_received: '9950000' });
    expect(await statusOf(db.store, ten.id)).toMatchObject({ status: 'created' });
    expect((await claimOf(txHash))?.refused_reason).toBeNull();
  });

  test('a payer proof yields to a Solana Pay reference naming another session', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = getBase58Decoder().decode(randomBytes(32));
    const named = await newSession(db.store, { merchantId, wallet, amount: '5', chain: 'solana' });
    const prover = await newSession(db.store, { merchantId, wallet, amount: '5', chain: 'solana' });
    const signature = getBase58Decoder().decode(randomBytes(64));
    await db.store.transaction((sql) => claimTransaction(sql, { sessionId: prover.id, chain: 'solana', txHash: signature, source: 'proof' }));
    await insertTransfer(db.store, {
      chain: 'solana',
      to: wallet,
      token: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      amount: 4_000_000n,
      block: 500n,
      referenceKeys: [named.reference!],
      txHash: signature,
    });
    await setHead(db.store, { chain: 'solana', head: 501n, finalized: 400n });
    await e.reconcile({ chain: 'solana', livemode });
    expect(await transferOf(signature)).toMatchObject({ session_id: named.id, match_method: 'reference' });
    expect((await claimOf(signature))?.refused_reason).toMatch(new RegExp(`reference names session ${named.id}`));
  });

  test("a payer's proof of one transaction takes only the transfers that pay its session; another merchant's exact payment in it is matched as usual", async () => {
    // One transaction paying two merchants (a batch payout): proving it for the first session
    // must not leave the second merchant's exactly-paid transfer unmatched.
    const e = engine();
    const first = await newMerchant(db.store);
    const firstWallet = newEvmWallet();
    const mine = await newSession(db.store, { merchantId: first, wallet: firstWallet, amount: '4' });
    const second = await newMerchant(db.store);
    const secondWallet = newEvmWallet();
    const theirs = await newSession(db.store, { merchantId: second, wallet: secondWallet, amount: '6' });
    const base = await nextBase();
    const txHash = `0x${randomBytes(32).toString('hex')}`;
    expect(await claim(mine.id, txHash)).toMatchObject({ created: true, transferIds: [] });
    const { id: toMine } = await insertTransfer(db.store, { to: firstWallet, amount: mine.amountDue, block: base, txHash });
    await db.store.query('UPDATE transfers SET log_index = 1 WHERE id = $1', [toMine]);
    const { id: toTheirs } = await insertTransfer(db.store, { to: secondWallet, amount: theirs.amountDue, block: base, txHash });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    const { rows } = await db.store.query('SELECT id, session_id, match_method FROM transfers WHERE tx_hash = $1 ORDER BY id', [txHash]);
    expect(rows).toEqual([
      { id: toMine, session_id: mine.id, match_method: 'claim' },
      { id: toTheirs, session_id: theirs.id, match_method: 'amount' },
    ]);
    expect(await statusOf(db.store, theirs.id)).toMatchObject({ status: 'confirming' });
  });

  test('a claimed transfer that does not pay the claiming session is never given to another session by amount', async () => {
    const e = engine();
    const { wallet, second, base } = await twoLookAlikes();
    const merchantId = await newMerchant(db.store);
    const otherWallet = newEvmWallet();
    const other = await newSession(db.store, { merchantId, wallet: otherWallet, amount: '7' });
    const txHash = `0x${'3c'.repeat(32)}`;
    await claim(second.id, txHash, 'x402');
    await insertTransfer(db.store, { to: otherWallet, amount: other.amountDue, block: base, txHash });
    await setHead(db.store, { head: base });
    const result = await e.reconcile({ chain, livemode });
    expect(result).toMatchObject({ matched: 0, unmatched: 1 });
    expect(await transferOf(txHash)).toMatchObject({ session_id: null });
    expect((await claimOf(txHash))?.refused_reason).toMatch(/not the session's wallet/);
    expect(await statusOf(db.store, other.id)).toMatchObject({ status: 'created' });
    expect(wallet).not.toBe(otherWallet);
  });
});

test('concurrent claims of one transaction for two sessions: exactly one wins, the other gets a conflict', async () => {
  const { wallet, first, second, base } = await twoLookAlikes();
  const { txHash } = await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base });
  await setHead(db.store, { head: base });
  const outcomes = await Promise.allSettled([claim(first.id, txHash), claim(second.id, txHash), claim(first.id, txHash), claim(second.id, txHash)]);
  const won = outcomes.filter((o) => o.status === 'fulfilled').length;
  const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
  expect(refused.every((error) => error instanceof ConflictError)).toBe(true);
  const owner = (await claimOf(txHash))!.session_id;
  expect([first.id, second.id]).toContain(owner);
  expect(await transferOf(txHash)).toMatchObject({ session_id: owner, match_method: 'claim' });
  // The claims for the winner's session succeed (idempotently); those for the other fail.
  expect(won).toBe(2);
  expect(refused).toHaveLength(2);
});
