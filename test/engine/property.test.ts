import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { insertTransfer, newEvmWallet, newMerchant, newSession, setHead } from '../helpers/engine.ts';
import { reconcileModel, type Model } from '../helpers/engineModel.ts';

const db = useTestDatabase('engine_property');
const logger = pino({ level: 'silent' });
const newEngine = () => createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });

/** Prices of the three sessions (USDC); part/rest/over are 40%, 60%, 150% of them, so amounts collide across sessions on purpose. */
const PRICES = [10n, 20n, 30n];
const UNIT = 1_000_000n;
const SHARES = { exact: 100n, part: 40n, rest: 60n, over: 150n } as const;

type Op =
  | { kind: 'pay'; session: number; share: keyof typeof SHARES }
  | { kind: 'mine'; blocks: number }
  | { kind: 'reorg'; depth: number }
  | { kind: 'expire'; session: number }
  | { kind: 'finalize' }
  | { kind: 'reconcile'; concurrent: boolean }
  | { kind: 'restart' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      session: fc.integer({ min: 0, max: 2 }),
      share: fc.constantFrom('exact', 'part', 'rest', 'over'),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('mine' as const), blocks: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 30, max: 40 })) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reorg' as const), depth: fc.integer({ min: 1, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), session: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'finalize' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('reconcile' as const), concurrent: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

let runBase = 1_000_000n;
const stats = new Map<string, number>();

async function run(count: number, ops: Op[], settleAtEnd: boolean): Promise<void> {
  const prices = PRICES.slice(0, count);
  const chain = 'polygon' as const;
  // Logical time: step i happens at T0 + i seconds, all safely in the past, so "expired" is
  // exact and "paid after expiry" does not depend on how fast the test runs.
  const t0 = Date.now() - 3_600_000;
  const merchantId = await newMerchant(db.store);
  const wallet = newEvmWallet();
  const ids: string[] = [];
  for (const [i, price] of prices.entries()) {
    const session = await newSession(db.store, { merchantId, wallet, amount: String(price) });
    await db.store.query('UPDATE payment_sessions SET created_at = $2 WHERE id = $1', [session.id, new Date(t0 - 600_000 + i * 1000)]);
    ids.push(session.id);
  }
  runBase += 10_000n;
  const model: Model = {
    sessions: prices.map((p) => ({
      due: p * UNIT,
      status: 'created',
      stored: 0n,
      reported: 0n,
      expiresAt: Infinity,
      expiredBefore: false,
      failedBefore: false,
      events: [],
    })),
    transfers: [],
    head: runBase,
    finalized: null,
  };
  await setHead(db.store, { head: model.head });
  let engines: Engine[] = [newEngine(), newEngine()];

  // Every run ends with a reconcile; half of them first let everything confirm and finalize.
  const tail: Op[] = settleAtEnd ? [{ kind: 'reconcile', concurrent: false }, { kind: 'mine', blocks: 80 }, { kind: 'finalize' }] : [];
  for (const [step, op] of [...ops, ...tail, { kind: 'reconcile', concurrent: false } as Op].entries()) {
    const now = step + 1;
    switch (op.kind) {
      case 'pay': {
        if (op.session >= prices.length) break;
        const amount = (prices[op.session]! * UNIT * SHARES[op.share]) / 100n;
        const block = model.head + 1n;
        model.head = block;
        await insertTransfer(db.store, { to: wallet, amount, block, blockTime: new Date(t0 + now * 1000) });
        await setHead(db.store, { head: model.head, finalized: model.finalized });
        model.transfers.push({ amount, block, time: now, removed: false, checked: false, session: null });
        break;
      }
      case 'mine':
        model.head += BigInt(op.blocks);
        await setHead(db.store, { head: model.head, finalized: model.finalized });
        break;
      case 'reorg': {
        const above = model.head - BigInt(op.depth);
        for (const t of model.transfers) if (t.block > above) t.removed = true;
        await db.store.query(
          `UPDATE transfers SET status = 'removed', removed_at = now() WHERE livemode AND chain = $1 AND to_address = $2 AND block_number > $3 AND status = 'observed'`,
          [chain, wallet, String(above)],
        );
        break;
      }
      case 'expire':
        if (op.session < prices.length && model.sessions[op.session]!.expiresAt === Infinity) {
          model.sessions[op.session]!.expiresAt = now - 0.5;
          await db.store.query('UPDATE payment_sessions SET expires_at = $2 WHERE id = $1', [ids[op.session], new Date(t0 + now * 1000 - 500)]);
        }
        break;
      case 'finalize':
        // Finality 40 blocks back: deeper than any reorg this test makes, as on a real chain.
        if (model.head - 40n > (model.finalized ?? -1n)) {
          model.finalized = model.head - 40n;
          await setHead(db.store, { head: model.head, finalized: model.finalized });
        }
        break;
      case 'reconcile':
        reconcileModel(model, now);
        if (op.concurrent) await Promise.all(engines.map((e) => e.reconcile({ chain, livemode: true })));
        else await engines[0]!.reconcile({ chain, livemode: true });
        break;
      case 'restart':
        engines = [newEngine(), newEngine()];
        break;
    }
  }

  const { rows: sessions } = await db.store.query<{ id: string; status: string; amount_received: string }>(
    'SELECT id, status, amount_received::text FROM payment_sessions WHERE id = ANY($1)',
    [ids],
  );
  const { rows: events } = await db.store.query<{ session_id: string; type: string; id: string }>(
    'SELECT session_id, type, id FROM events WHERE session_id = ANY($1) ORDER BY seq',
    [ids],
  );
  const actual = ids.map((id) => ({
    status: sessions.find((s) => s.id === id)!.status,
    received: sessions.find((s) => s.id === id)!.amount_received,
    events: events.filter((e) => e.session_id === id).map((e) => e.type),
  }));
  const expected = model.sessions.map((s, i) => ({
    status: s.status,
    received: String(model.transfers.filter((t) => t.session === i && !t.removed).reduce((a, t) => a + t.amount, 0n)),
    events: s.events,
  }));
  if (process.env.ENGINE_STATS) for (const s of expected) for (const e of s.events) stats.set(e, (stats.get(e) ?? 0) + 1);
  expect(actual).toEqual(expected);
  expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
}

describe('engine against a reference model', () => {
  test("random transfers, reorgs, expiries, restarts and concurrent engines give the model's final states and events, each once", async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(opArb, { minLength: 8, maxLength: 40, size: 'max' }), fc.boolean(), run), {
      numRuns: 80,
      endOnFailure: true,
    });
    if (process.env.ENGINE_STATS) console.log(Object.fromEntries(stats));
  });
});
