import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { eventsOf, insertTransfer, newEvmWallet, newMerchant, newSession, removeAbove, setHead, statusOf } from '../helpers/engine.ts';

// The engine reads a session at rest (settled, expired, failed) only when one of its transfers
// changed since it was last evaluated (migration 021's mark): these are the changes that must
// still reach it, and the proof that an unchanged one is not read.
const db = useTestDatabase('engine_resting');
const logger = pino({ level: 'silent' });
const engine = () => createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
const chain = 'polygon' as const;
const livemode = true;

async function nextBase(): Promise<bigint> {
  const { rows } = await db.store.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}

const marked = async (id: string) =>
  (await db.store.query<{ transfers_changed: boolean }>('SELECT transfers_changed FROM payment_sessions WHERE id = $1', [id])).rows[0]!.transfers_changed;

/** A settled session paid by one transfer at `base`. */
async function settledSession() {
  const e = engine();
  const merchantId = await newMerchant(db.store);
  const wallet = newEvmWallet();
  const session = await newSession(db.store, { merchantId, wallet, amount: '10' });
  const base = await nextBase();
  await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
  await setHead(db.store, { head: base + 40n, finalized: base });
  await e.reconcile({ chain, livemode });
  await e.reconcile({ chain, livemode });
  expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'settled' });
  return { e, session, wallet, base };
}

describe('sessions at rest', () => {
  test('a settled session whose payment a reorg removes is marked, recounted on the next pass (an incident), and unmarked', async () => {
    const { e, session, base } = await settledSession();
    expect(await marked(session.id)).toBe(false);
    await removeAbove(db.store, { block: base - 1n });
    expect(await marked(session.id)).toBe(true);
    await e.reconcile({ chain, livemode });
    expect(await marked(session.id)).toBe(false);
    // Settled is final: no event, but the money is recounted and the loss recorded as an incident.
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'settled', amount_received: '0', tx_hash: null });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.settled']);
    const { rows } = await db.store.query('SELECT kind FROM engine_incidents WHERE session_id = $1', [session.id]);
    expect(rows).toEqual([{ kind: 'deep_reorg' }]);
  });

  /** Attributes the transfer in `block` to the session as a manual attribution leaves it: attributed, out of matching's queue. */
  const attributeByHand = async (sessionId: string, block: bigint) => {
    await db.store.query(`UPDATE transfers SET session_id = $1, match_method = 'manual', matched_at = now() WHERE block_number = $2 AND chain = $3`, [
      sessionId,
      block,
      chain,
    ]);
    await db.store.query('DELETE FROM transfers_undecided WHERE block_number = $1 AND chain = $2', [block, chain]);
  };

  test('a duplicate payment to a settled session marks it and is reported as overpaid once it is confirmed', async () => {
    const { e, session, wallet, base } = await settledSession();
    // Inserted already attributed (as a manual attribution leaves it), one block later.
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 41n });
    await attributeByHand(session.id, base + 41n);
    expect(await marked(session.id)).toBe(true);
    await setHead(db.store, { head: base + 80n, finalized: base + 41n });
    await e.reconcile({ chain, livemode });
    expect(await marked(session.id)).toBe(false);
    expect((await eventsOf(db.store, session.id)).at(-1)).toBe('payment.overpaid');
  });

  test('a duplicate seen before it is confirmed keeps the mark until it is final, so its confirmation is still reported', async () => {
    const { e, session, wallet, base } = await settledSession();
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 41n });
    await attributeByHand(session.id, base + 41n);
    // The pass reads it one block deep: nothing to report yet, and the mark must survive, since
    // its confirmations grow with the head and no transfer row changes again.
    await setHead(db.store, { head: base + 41n, finalized: base });
    await e.reconcile({ chain, livemode });
    expect(await marked(session.id)).toBe(true);
    expect((await eventsOf(db.store, session.id)).at(-1)).toBe('payment.settled');
    await setHead(db.store, { head: base + 80n, finalized: base + 41n });
    await e.reconcile({ chain, livemode });
    expect((await eventsOf(db.store, session.id)).at(-1)).toBe('payment.overpaid');
    expect(await marked(session.id)).toBe(false);
  });

  test('an unchanged settled session is not read by a pass, and a change to a session in flight does not mark it', async () => {
    const { e, session } = await settledSession();
    // Its stored total is made wrong behind the engine's back: a pass that read it would "fix" it.
    await db.store.query('UPDATE payment_sessions SET amount_received = 1 WHERE id = $1', [session.id]);
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'settled', amount_received: '1' });

    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const open = await newSession(db.store, { merchantId, wallet, amount: '10' });
    const base = await nextBase();
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, open.id)).toMatchObject({ status: 'confirming' });
    expect(await marked(open.id)).toBe(false);
  });
});
