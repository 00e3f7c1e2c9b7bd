import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, merchant } from '../helpers/delivery.ts';
import { createEndpoint } from '../../src/delivery/index.ts';
import { claimDueDeliveries, nextDueAt } from '../../src/delivery/claim.ts';
import { dispatchEvents } from '../../src/delivery/dispatch.ts';
import { appendEvent } from '../../src/payments/outbox.ts';

const db = useTestDatabase('delivery_claim');

/** Two merchants' endpoints: A with a backlog of 30 deliveries, B with 3. */
async function backlog() {
  const a = await merchant(db.store, 'Backlog Ltd');
  const b = await merchant(db.store, 'Quiet Ltd');
  const endpointA = await createEndpoint(db.store, box, { merchantId: a.merchant.id, livemode: false, url: 'https://a.example/hook' });
  const endpointB = await createEndpoint(db.store, box, { merchantId: b.merchant.id, livemode: false, url: 'https://b.example/hook' });
  await db.store.transaction(async (sql) => {
    for (let i = 0; i < 30; i++) await appendEvent(sql, { merchantId: a.merchant.id, livemode: false, type: 'payment.confirmed', data: { i } });
    for (let i = 0; i < 3; i++) await appendEvent(sql, { merchantId: b.merchant.id, livemode: false, type: 'payment.confirmed', data: { i } });
  });
  const now = new Date();
  while ((await db.store.transaction((sql) => dispatchEvents(sql, { now, limit: 128 }))).events > 0);
  return { endpointA: endpointA.endpoint.id, endpointB: endpointB.endpoint.id, now };
}

describe('claimDueDeliveries', () => {
  test('caps each target at perTarget in flight across claims, so a backlog on one endpoint does not hold up another', async () => {
    await db.store.query('TRUNCATE webhook_attempts, webhook_deliveries, events CASCADE');
    const { endpointA, endpointB, now } = await backlog();
    const first = await claimDueDeliveries(db.store, { now, limit: 10, perTarget: 5 });
    const count = (claimed: { endpointId: string | null }[], id: string) => claimed.filter((d) => d.endpointId === id).length;
    expect(count(first, endpointA)).toBe(5);
    expect(count(first, endpointB)).toBe(3);
    // A's five are leased: it gets nothing more until one is done; B has nothing left.
    expect(await claimDueDeliveries(db.store, { now, limit: 10, perTarget: 5 })).toEqual([]);
    // Two of A's finish: two more of A's, the oldest first.
    const done = first.filter((d) => d.endpointId === endpointA).slice(0, 2);
    await db.store.query(`UPDATE webhook_deliveries SET status = 'succeeded', locked_until = NULL, next_attempt_at = NULL WHERE id = ANY($1)`, [
      done.map((d) => d.id),
    ]);
    const second = await claimDueDeliveries(db.store, { now, limit: 10, perTarget: 5 });
    expect(second.map((d) => d.endpointId)).toEqual([endpointA, endpointA]);
    const { rows } = await db.store.query<{ id: string }>(
      `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending' AND locked_until IS NULL ORDER BY next_attempt_at, id LIMIT 2`,
      [endpointA],
    );
    expect(rows).toHaveLength(2);
    // Leases that ran out (a worker that died) count no longer: those deliveries are claimed again.
    const later = new Date(now.getTime() + 61_000);
    const third = await claimDueDeliveries(db.store, { now: later, limit: 100, perTarget: 5 });
    expect(count(third, endpointA)).toBe(5);
    expect(count(third, endpointB)).toBe(3);
    expect(new Set(third.map((d) => d.id)).size).toBe(8);
    // Nothing is claimed twice while leased, and nothing claimable is skipped: 30 + 3 deliveries in all.
    const { rows: states } = await db.store.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
    );
    expect(states).toEqual([
      { status: 'pending', n: 31 },
      { status: 'succeeded', n: 2 },
    ]);
  });

  test('nextDueAt: the earliest unleased due time, or the end of the earliest lease', async () => {
    await db.store.query('TRUNCATE webhook_attempts, webhook_deliveries, events CASCADE');
    expect(await nextDueAt(db.store)).toBeUndefined();
    const { now } = await backlog();
    expect((await nextDueAt(db.store))?.getTime()).toBe(now.getTime());
    await db.store.query(`UPDATE webhook_deliveries SET locked_until = $1`, [new Date(now.getTime() + 60_000)]);
    expect((await nextDueAt(db.store))?.getTime()).toBe(now.getTime() + 60_000);
    await db.store.query(`UPDATE webhook_deliveries SET next_attempt_at = $1, locked_until = NULL WHERE id = (SELECT min(id) FROM webhook_deliveries)`, [
      new Date(now.getTime() + 5_000),
    ]);
    expect((await nextDueAt(db.store))?.getTime()).toBe(now.getTime() + 5_000);
  });
});
