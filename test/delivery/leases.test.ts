import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { createEndpoint, createHttpTransport, LEASE_MS, type WebhookTransport } from '../../src/delivery/index.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { statementText, type Store } from '../../src/store/index.ts';
import { box, createFakeClock, delivery, merchant } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

const db = useTestDatabase('delivery_leases');
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver(() => ({ status: 200, delayMs: 5 }));
});
afterAll(async () => {
  await receiver.close();
});

/** An endpoint with `events` events waiting for it. */
async function endpointWithBacklog(path: string, events: number) {
  const { merchant: m } = await merchant(db.store);
  const { endpoint } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}${path}` });
  await db.store.transaction(async (sql) => {
    for (let i = 0; i < events; i++) await appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.confirmed', data: { i } });
  });
  return endpoint.id;
}

const statuses = async (endpointId: string) =>
  (
    await db.store.query<{ status: string; leased: boolean }>(
      'SELECT status, locked_until IS NOT NULL AS leased FROM webhook_deliveries WHERE endpoint_id = $1',
      [endpointId],
    )
  ).rows;

describe('leases and HTTP slots', () => {
  test('a target never gets more than its cap of requests at once, even while earlier successes wait to be recorded; those keep their leases', async () => {
    const a = await endpointWithBacklog('/slots-a', 12);
    const b = await endpointWithBacklog('/slots-b', 12);
    const http = createHttpTransport({ allowPrivate: true });
    const running = new Map<string, number>();
    const most = new Map<string, number>();
    const sent = new Map<string, number>();
    const counting: WebhookTransport = async (request) => {
      const path = new URL(request.url).pathname;
      running.set(path, (running.get(path) ?? 0) + 1);
      most.set(path, Math.max(most.get(path) ?? 0, running.get(path)!));
      sent.set(path, (sent.get(path) ?? 0) + 1);
      try {
        return await http(request);
      } finally {
        running.set(path, running.get(path)! - 1);
      }
    };
    // No attempt can be recorded while this lock is held: every success stays pending, leased.
    const blocker = new pg.Client({ connectionString: db.connectionString });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE webhook_attempts IN SHARE MODE');
    // 4 requests at once in all, 2 per target; 2 leases per slot: 4 per target, 8 in all.
    const worker = delivery(db.store, { concurrency: 4, fetch: counting, pollIntervalMs: 50 });
    try {
      await worker.start();
      // Each target's two slots were freed by the answers and sent two more, then its leases ran out.
      await waitFor(async () => sent.get('/slots-a') === 4 && sent.get('/slots-b') === 4, 'four sends to each target');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect([sent.get('/slots-a'), sent.get('/slots-b')]).toEqual([4, 4]);
      for (const id of [a, b]) {
        const rows = await statuses(id);
        expect(rows.filter((row) => row.leased)).toHaveLength(4);
        expect(rows.every((row) => row.status === 'pending')).toBe(true);
      }

      await blocker.query('COMMIT');
      await waitFor(async () => (await statuses(a)).concat(await statuses(b)).every((row) => row.status === 'succeeded'), 'all delivered');
      expect([sent.get('/slots-a'), sent.get('/slots-b')]).toEqual([12, 12]);
      expect([most.get('/slots-a'), most.get('/slots-b')]).toEqual([2, 2]);
      const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = ANY($1) AND succeeded', [
        [a, b],
      ]);
      expect(rows[0]!.n).toBe(24);
    } finally {
      await blocker.end();
      await worker.stop();
      await http.close();
    }
  });

  test('a worker that dies after the receiver answered 200 but before the success was committed: another worker re-sends exactly those, none is lost', async () => {
    const endpointId = await endpointWithBacklog('/crash-after-200', 6);
    const hits = () => receiver.received.filter((r) => r.path === '/crash-after-200').map((r) => String(r.headers['x-service-delivery-id']));

    // The dying worker's database: its first success write commits, later ones never do, and
    // after the crash nothing it sends reaches Postgres.
    let crashed = false;
    let successWrites = 0;
    const hung: ((error: Error) => void)[] = [];
    const gone = () => new Error('the worker process is gone');
    const dying: Store = {
      ...db.store,
      pool: db.store.pool,
      query: (async (statement: Parameters<Store['query']>[0], values?: unknown[]) => {
        if (crashed) throw gone();
        if (statementText(statement).includes('INSERT INTO webhook_attempts') && ++successWrites > 1) {
          return new Promise((_, reject) => hung.push(reject));
        }
        return db.store.query(statement, values);
      }) as Store['query'],
      transaction: ((work, options) => (crashed ? Promise.reject(gone()) : db.store.transaction(work, options))) as Store['transaction'],
    };
    const start = new Date();
    const first = delivery(dying, { clock: createFakeClock(start), concurrency: 8, pollIntervalMs: 50 });
    await first.start();
    await waitFor(async () => hung.length > 0 && hits().length === 6, 'all six sent, a success write stuck');
    crashed = true;
    for (const reject of hung) reject(gone());
    await first.stop();

    const before = await db.store.query<{ id: string; status: string }>('SELECT id, status FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]);
    const recorded = before.rows.filter((row) => row.status === 'succeeded').map((row) => row.id);
    const unrecorded = before.rows.filter((row) => row.status === 'pending').map((row) => row.id);
    expect(recorded).toHaveLength(1); // the first write carried the first answer alone
    expect(unrecorded).toHaveLength(5);
    expect(hits().sort()).toEqual(before.rows.map((row) => row.id).sort());

    // Once the dead worker's leases run out, a survivor sends the unrecorded ones again, only those.
    const survivor = delivery(db.store, { clock: createFakeClock(new Date(start.getTime() + LEASE_MS + 1_000)) });
    expect(await survivor.drain()).toBe(5);
    await survivor.stop();
    const resent = hits().slice(6);
    expect(resent.sort()).toEqual([...unrecorded].sort());
    expect((await statuses(endpointId)).every((row) => row.status === 'succeeded')).toBe(true);
    const { rows: attempts } = await db.store.query<{ delivery_id: string; n: number }>(
      'SELECT delivery_id, count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1 AND succeeded GROUP BY delivery_id',
      [endpointId],
    );
    expect(attempts).toHaveLength(6);
    expect(attempts.every((row) => row.n === 1)).toBe(true);
  });
});
