import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { createStore } from '../../src/store/index.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { expireNow, insertTransfer, newEvmWallet, newMerchant, newSession, setHead } from '../helpers/engine.ts';

const db = useTestDatabase('engine_concurrency');
const logger = pino({ level: 'silent' });

describe('several engines on one database', () => {
  test('two engines (two pools, as two processes) reconciling at once make every transition exactly once', async () => {
    const other = createStore({ connectionString: db.connectionString, max: 5 });
    try {
      const engines = [
        createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) }),
        createEngine({ store: other, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) }),
      ];
      const merchantId = await newMerchant(db.store);
      const wallet = newEvmWallet();
      const sessions = [];
      for (let i = 0; i < 20; i++) sessions.push(await newSession(db.store, { merchantId, wallet, amount: '7' }));
      // Due amounts are 7.000000 .. 7.000019, one per session; the first 15 are paid, the rest expire.
      for (const [i, s] of sessions.entries()) {
        if (i < 15) await insertTransfer(db.store, { to: wallet, amount: s.amountDue, block: 100n + BigInt(i) });
        else await expireNow(db.store, s.id);
      }
      await setHead(db.store, { head: 114n });
      const storm = async (step: () => Promise<void>) => {
        await step();
        await Promise.all(engines.flatMap((e) => [e.reconcile({ chain: 'polygon', livemode: true }), e.reconcile({ chain: 'polygon', livemode: true })]));
        for (const e of engines) e.onChainChange({ chain: 'polygon', livemode: true, kind: 'head' });
        await Promise.all(engines.map((e) => e.idle()));
      };
      await storm(async () => {});
      await storm(() => setHead(db.store, { head: 200n }));
      await storm(() => setHead(db.store, { head: 250n, finalized: 200n }));

      const { rows } = await db.store.query<{ session_id: string; types: string[] }>(
        `SELECT session_id, array_agg(type ORDER BY seq) AS types FROM events WHERE session_id = ANY($1) GROUP BY session_id`,
        [sessions.map((s) => s.id)],
      );
      const bySession = new Map(rows.map((r) => [r.session_id, r.types]));
      for (const [i, s] of sessions.entries()) {
        expect(bySession.get(s.id), s.id).toEqual(i < 15 ? ['payment.confirming', 'payment.confirmed', 'payment.settled'] : ['payment.expired']);
      }
      const { rows: statuses } = await db.store.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM payment_sessions WHERE id = ANY($1) GROUP BY status ORDER BY status',
        [sessions.map((s) => s.id)],
      );
      expect(statuses).toEqual([
        { status: 'expired', n: 5 },
        { status: 'settled', n: 15 },
      ]);
    } finally {
      await other.close();
    }
  });

  test('expiry is state in the database, not a timer: it fires once after a restart, with two loops running', async () => {
    const merchantId = await newMerchant(db.store);
    const session = await newSession(db.store, { merchantId, wallet: newEvmWallet(), amount: '3' });
    const first = new AbortController();
    const firstLoop = createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), intervalMs: 50 }).run(first.signal);
    await new Promise((resolve) => setTimeout(resolve, 150));
    first.abort();
    await firstLoop;
    // The session expires while no engine runs ("the process was down").
    await expireNow(db.store, session.id);
    const second = new AbortController();
    const loops = [0, 1].map(() =>
      createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), intervalMs: 50 }).run(second.signal),
    );
    const deadline = Date.now() + 10_000;
    while ((await db.store.query(`SELECT 1 FROM payment_sessions WHERE id = $1 AND status = 'expired'`, [session.id])).rowCount === 0) {
      if (Date.now() > deadline) throw new Error('the session did not expire');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    second.abort();
    await Promise.all(loops);
    const { rows } = await db.store.query<{ type: string }>('SELECT type FROM events WHERE session_id = $1', [session.id]);
    expect(rows.map((r) => r.type)).toEqual(['payment.expired']);
  });

  test('chain changes arriving while a run matches defer its evaluation to a later run, and the run with nothing queued behind it evaluates: every session moves once', async () => {
    const engine = createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const sessions = [];
    for (let i = 0; i < 12; i++) sessions.push(await newSession(db.store, { merchantId, wallet, amount: '9' }));
    await setHead(db.store, { head: 300n });
    // A backfill as the ingester commits it: a transfer per commit, each followed by a chain
    // change without waiting, so most arrive while a run is under way and are coalesced.
    for (const [i, s] of sessions.entries()) {
      await insertTransfer(db.store, { to: wallet, amount: s.amountDue, block: 300n + BigInt(i) });
      engine.onChainChange({ chain: 'polygon', livemode: true, kind: 'transfers' });
    }
    await engine.idle();
    const { rows } = await db.store.query<{ status: string; types: string[] }>(
      `SELECT s.status, array(SELECT type FROM events e WHERE e.session_id = s.id ORDER BY seq) AS types FROM payment_sessions s WHERE s.id = ANY($1)`,
      [sessions.map((s) => s.id)],
    );
    expect(rows).toHaveLength(12);
    for (const row of rows) expect(row).toEqual({ status: 'confirming', types: ['payment.confirming'] });
  });
});
