import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, merchant } from '../helpers/delivery.ts';
import { createEndpoint } from '../../src/delivery/index.ts';
import { claimDueDeliveries } from '../../src/delivery/claim.ts';
import { dispatchEvents } from '../../src/delivery/dispatch.ts';
import { appendEvent } from '../../src/payments/outbox.ts';

/**
 * Dispatch leases the new deliveries its worker can send (issue 28 goal 5, DispatchLease in
 * src/delivery/dispatch.ts): written once, leased, with what an attempt needs; never more than
 * the worker's room or a target's cap, and none for a target whose older deliveries wait.
 */
const db = useTestDatabase('delivery_dispatch_lease');

async function shop(events: number) {
  const { merchant: m } = await merchant(db.store, `Lease Ltd ${Math.random()}`);
  const { endpoint } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: 'https://lease.example/hook' });
  await db.store.transaction(async (sql) => {
    for (let i = 0; i < events; i++) await appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.confirmed', data: { i } });
  });
  return { merchantId: m.id, endpointId: endpoint.id };
}

const leasedRows = async (endpointId: string) =>
  (
    await db.store.query<{ leased: boolean; n: number }>(
      'SELECT locked_until IS NOT NULL AS leased, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY 1 ORDER BY 1',
      [endpointId],
    )
  ).rows;

test('leased at insert up to the room and the target cap, with body and secret; the rest wait for the claim, oldest first', async () => {
  await db.store.query('TRUNCATE webhook_attempts, webhook_deliveries, events CASCADE');
  const { endpointId } = await shop(6);
  const now = new Date();
  const until = new Date(now.getTime() + 60_000);

  // Room for 4, cap 3 per target: three leased, three unleased.
  const first = await db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 6, lease: { until, max: 4, perTarget: 3 } }));
  expect(first).toMatchObject({ events: 6, deliveries: 6 });
  expect(first.leased).toHaveLength(3);
  for (const delivery of first.leased) {
    expect(delivery).toMatchObject({ endpointId, attemptCount: 0, eventType: 'payment.confirmed' });
    expect(delivery.secretSealed).toEqual(expect.any(String));
    const { rows } = await db.store.query<{ body: string; locked_until: Date }>(
      'SELECT e.body, d.locked_until FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1',
      [delivery.id],
    );
    expect(rows[0]!.body).toBe(delivery.body);
    expect(rows[0]!.locked_until.getTime()).toBe(until.getTime());
  }
  // The oldest events are the leased ones, in event order (the order the worker starts them).
  const { rows: order } = await db.store.query<{ id: string }>(
    'SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.endpoint_id = $1 ORDER BY e.seq LIMIT 3',
    [endpointId],
  );
  expect(first.leased.map((d) => d.id)).toEqual(order.map((row) => row.id));
  expect(await leasedRows(endpointId)).toEqual([
    { leased: false, n: 3 },
    { leased: true, n: 3 },
  ]);

  // A new event for a target with unleased due deliveries is not leased, whatever the room: the
  // claim takes the waiting ones first, then it.
  await db.store.transaction((sql) =>
    appendEvent(sql, { merchantId: first.leased[0]!.merchantId, livemode: false, type: 'payment.confirmed', data: { late: true } }),
  );
  const second = await db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 10, lease: { until, max: 10, perTarget: 10 } }));
  expect(second).toMatchObject({ events: 1, deliveries: 1, leased: [] });
  const { rows: waiting } = await db.store.query<{ id: string }>(
    'SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.endpoint_id = $1 AND d.locked_until IS NULL ORDER BY e.seq LIMIT 3',
    [endpointId],
  );
  const claimed = await claimDueDeliveries(db.store, { now, limit: 3, perTarget: 10 });
  expect(claimed.map((d) => d.id).sort()).toEqual(waiting.map((row) => row.id).sort());
});

test('a target at its cap in leases gets none at dispatch; an expired lease is work waiting for the claim, not a lease; no room leases nothing', async () => {
  await db.store.query('TRUNCATE webhook_attempts, webhook_deliveries, events CASCADE');
  const { endpointId, merchantId } = await shop(2);
  const now = new Date();
  const until = new Date(now.getTime() + 60_000);
  const first = await db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 2, lease: { until, max: 5, perTarget: 2 } }));
  expect(first.leased).toHaveLength(2);

  const more = async (lease: { max: number; perTarget: number }) => {
    await db.store.transaction((sql) => appendEvent(sql, { merchantId, livemode: false, type: 'payment.confirmed', data: {} }));
    return db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 1, lease: { until, ...lease } }));
  };
  // Two leased of a cap of two: the next one is inserted unleased.
  expect((await more({ max: 5, perTarget: 2 })).leased).toEqual([]);
  // Once the leases have run out (a worker that died), they no longer hold the cap but are due
  // work waiting: the claim sends them again before a new delivery of that target is leased.
  await db.store.query(`UPDATE webhook_deliveries SET locked_until = now() - interval '1 second' WHERE endpoint_id = $1 AND locked_until IS NOT NULL`, [
    endpointId,
  ]);
  await db.store.query(`UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL WHERE endpoint_id = $1 AND locked_until IS NULL`, [
    endpointId,
  ]);
  expect((await more({ max: 5, perTarget: 2 })).leased).toEqual([]);
  expect((await claimDueDeliveries(db.store, { now, limit: 5, perTarget: 2 })).length).toBe(2);
  await db.store.query(`UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL WHERE endpoint_id = $1`, [endpointId]);
  expect((await more({ max: 0, perTarget: 2 })).leased).toEqual([]);
  await db.store.query(`UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL WHERE endpoint_id = $1`, [endpointId]);
  expect((await more({ max: 1, perTarget: 2 })).leased).toHaveLength(1);
});
