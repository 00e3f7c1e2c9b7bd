import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { verifyWebhook } from '../../src/index.ts';
import { claimDueDeliveries } from '../../src/delivery/claim.ts';
import { createEndpoint, DISABLE_AFTER_FAILING_MS, LEASE_MS, MAX_ATTEMPTS, RETRY_DELAYS_MS, retryDelayMs } from '../../src/delivery/index.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { box, createFakeClock, delivery, merchant } from '../helpers/delivery.ts';
import { startReceiver, type Reply } from '../helpers/webhookReceiver.ts';

const db = useTestDatabase('delivery_retries');

/** Per-path scripts: each path answers with its list in order, then 200. */
const scripts = new Map<string, Reply[]>();
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver((request) => scripts.get(request.path)?.shift() ?? { status: 200 });
});
afterAll(async () => {
  await receiver.close();
});

async function setup(path: string, replies: Reply[]) {
  scripts.set(path, replies);
  const { merchant: m } = await merchant(db.store);
  const { endpoint, secret } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}${path}` });
  const event = await db.store.transaction((sql) => appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.confirmed', data: { id: 'ses_r' } }));
  const hits = () => receiver.received.filter((r) => r.path === path);
  const row = async () => (await db.store.query('SELECT * FROM webhook_deliveries WHERE event_id = $1', [event.id])).rows[0]!;
  const endpointRow = async () => (await db.store.query('SELECT * FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0]!;
  return { merchantId: m.id, endpoint, secret, event, hits, row, endpointRow };
}

describe('retry schedule', () => {
  test('retryDelayMs() follows immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h with ±10 % jitter, then gives up', () => {
    expect(RETRY_DELAYS_MS.map((ms) => ms / 1000)).toEqual([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]);
    expect(MAX_ATTEMPTS).toBe(10);
    expect(retryDelayMs(1, { random: () => 0 })).toBe(4_500);
    expect(retryDelayMs(1, { random: () => 0.999999 })).toBe(5_500);
    expect(retryDelayMs(9, { random: () => 0.5 })).toBe(86_400_000);
    expect(retryDelayMs(10)).toBeUndefined();
    expect(retryDelayMs(2, { retryAfterMs: 7_000 })).toBe(7_000);
    expect(retryDelayMs(2, { retryAfterMs: 10 * 86_400_000 })).toBe(86_400_000);
  });

  test('a receiver that fails 3 times then succeeds gets the event on attempt 4, each retry exactly on schedule, nothing early', async () => {
    const t = await setup('/flaky', [{ status: 500 }, { status: 502, body: 'bad gateway' }, { status: 404 }]);
    const clock = createFakeClock();
    const start = clock.now().getTime();
    const worker = delivery(db.store, { clock });
    await worker.drain();
    expect(t.hits()).toHaveLength(1);
    let expectedAt = start;
    for (const [index, delay] of RETRY_DELAYS_MS.slice(0, 3).entries()) {
      expectedAt += delay;
      const row = await t.row();
      expect(row.status).toBe('pending');
      expect(row.next_attempt_at.getTime()).toBe(expectedAt);
      clock.set(new Date(expectedAt - 1));
      expect(await worker.drain()).toBe(0); // 1 ms early: nothing
      clock.set(new Date(expectedAt));
      expect(await worker.drain()).toBe(1);
      expect(t.hits()).toHaveLength(index + 2);
    }
    const row = await t.row();
    expect(row).toMatchObject({ status: 'succeeded', attempt_count: 4, last_response_status: 200 });
    expect(row.completed_at.getTime()).toBe(expectedAt);
    // Each attempt was signed afresh (own timestamp and nonce) and verifies at its own time.
    const hits = t.hits();
    expect(new Set(hits.map((h) => h.headers['x-service-nonce'])).size).toBe(4);
    expect(new Set(hits.map((h) => h.rawBody)).size).toBe(1);
    expect(hits.map((h) => Number(h.headers['x-service-timestamp']) * 1000)).toEqual(
      [start, start + 5_000, start + 305_000, start + 2_105_000].map((ms) => Math.floor(ms / 1000) * 1000),
    );
    await expect(verifyWebhook(hits[3]!.rawBody, hits[3]!.headers, t.secret, { now: clock.now() })).resolves.toMatchObject({ id: t.event.id });
    const { rows: attempts } = await db.store.query(
      'SELECT attempt_number, response_status, response_body_excerpt, succeeded FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt_number',
      [t.event.id],
    );
    expect(attempts).toEqual([
      { attempt_number: 1, response_status: 500, response_body_excerpt: '', succeeded: false },
      { attempt_number: 2, response_status: 502, response_body_excerpt: 'bad gateway', succeeded: false },
      { attempt_number: 3, response_status: 404, response_body_excerpt: '', succeeded: false },
      { attempt_number: 4, response_status: 200, response_body_excerpt: '', succeeded: true },
    ]);
    expect((await t.endpointRow()).failing_since).toBeNull();
  });

  test('Retry-After on 429 and 503 replaces the scheduled wait (seconds and HTTP dates)', async () => {
    const clock = createFakeClock(new Date('2026-11-21T12:00:00Z'));
    const t = await setup('/busy', [
      { status: 429, headers: { 'retry-after': '120' } },
      { status: 503, headers: { 'retry-after': 'Sat, 21 Nov 2026 12:10:00 GMT' } },
      { status: 500, headers: { 'retry-after': '1' } },
    ]);
    const worker = delivery(db.store, { clock });
    await worker.drain();
    expect((await t.row()).next_attempt_at.toISOString()).toBe('2026-11-21T12:02:00.000Z');
    clock.set(new Date('2026-11-21T12:02:00Z'));
    await worker.drain();
    expect((await t.row()).next_attempt_at.toISOString()).toBe('2026-11-21T12:10:00.000Z');
    clock.set(new Date('2026-11-21T12:10:00Z'));
    await worker.drain();
    // A 500's Retry-After is not honoured: the schedule's third wait (30 min) applies.
    expect((await t.row()).next_attempt_at.toISOString()).toBe('2026-11-21T12:40:00.000Z');
  });

  test('after the 10th failed attempt the delivery fails for good', async () => {
    const t = await setup(
      '/down',
      Array.from({ length: 10 }, () => ({ status: 500 })),
    );
    const clock = createFakeClock();
    const worker = delivery(db.store, { clock });
    await worker.drain();
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay);
      await worker.drain();
    }
    expect(t.hits()).toHaveLength(10);
    expect(await t.row()).toMatchObject({ status: 'failed', attempt_count: 10, next_attempt_at: null, last_error: 'HTTP 500' });
    clock.advance(7 * 86_400_000);
    expect(await worker.drain()).toBe(0);
  });
});

describe('disabling endpoints', () => {
  test('410 Gone disables the endpoint at once, ends its pending deliveries, and tells the merchant on its other endpoints', async () => {
    const t = await setup('/gone', [{ status: 500 }, { status: 410 }]);
    const { endpoint: watcher, secret: watcherSecret } = await createEndpoint(db.store, box, {
      merchantId: t.merchantId,
      livemode: false,
      url: `${receiver.url}/watcher`,
      enabledEvents: ['webhook_endpoint.disabled'],
    });
    // A second event already queued for the gone endpoint.
    const clock = createFakeClock();
    const worker = delivery(db.store, { clock });
    await worker.drain();
    const second = await db.store.transaction((sql) => appendEvent(sql, { merchantId: t.merchantId, livemode: false, type: 'payment.expired', data: {} }));
    scripts.set('/gone', [{ status: 500 }]);
    await worker.drain(); // second event: 500 -> pending
    scripts.set('/gone', [{ status: 410 }, { status: 410 }]);
    clock.advance(5_000);
    await worker.drain(); // both due, both answered 410: the endpoint is disabled once
    const endpoint = await t.endpointRow();
    expect(endpoint).toMatchObject({ status: 'disabled', disabled_reason: 'the endpoint answered 410 Gone' });
    const { rows } = await db.store.query('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [t.endpoint.id]);
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(second.id).toBeTruthy();
    // The merchant hears about it on its other endpoint.
    await worker.drain();
    const notice = receiver.received.filter((r) => r.path === '/watcher');
    expect(notice).toHaveLength(1);
    const event = await verifyWebhook(notice[0]!.rawBody, notice[0]!.headers, watcherSecret, { now: clock.now() });
    expect(event).toMatchObject({
      event: 'webhook_endpoint.disabled',
      data: { id: t.endpoint.id, status: 'disabled', reason: 'the endpoint answered 410 Gone' },
    });
    // Later events skip the disabled endpoint.
    clock.advance(86_400_000);
    const hitsBefore = t.hits().length;
    await db.store.transaction((sql) => appendEvent(sql, { merchantId: t.merchantId, livemode: false, type: 'payment.confirmed', data: {} }));
    await worker.drain();
    expect(t.hits()).toHaveLength(hitsBefore);
    expect(watcher.id).toBeTruthy();
  });

  test('an endpoint that fails every attempt for 5 days is disabled; one success resets the streak', async () => {
    const t = await setup('/sick', []);
    scripts.set(
      '/sick',
      Array.from({ length: 100 }, () => ({ status: 500 })),
    );
    const clock = createFakeClock();
    const start = clock.now().getTime();
    const worker = delivery(db.store, { clock });
    await worker.drain();
    expect((await t.endpointRow()).failing_since.getTime()).toBe(start);
    // New events keep coming and keep failing, every 12 hours.
    while (clock.now().getTime() - start < DISABLE_AFTER_FAILING_MS - 12 * 3_600_000) {
      clock.advance(12 * 3_600_000);
      await db.store.transaction((sql) => appendEvent(sql, { merchantId: t.merchantId, livemode: false, type: 'payment.confirmed', data: {} }));
      await worker.drain();
      expect((await t.endpointRow()).status).toBe('enabled');
    }
    clock.set(new Date(start + DISABLE_AFTER_FAILING_MS));
    await db.store.transaction((sql) => appendEvent(sql, { merchantId: t.merchantId, livemode: false, type: 'payment.confirmed', data: {} }));
    await worker.drain();
    const endpoint = await t.endpointRow();
    expect(endpoint.status).toBe('disabled');
    expect(endpoint.disabled_reason).toMatch(/^every attempt failed for 5 days/);
    const { rows } = await db.store.query<{ n: bigint }>("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [
      t.endpoint.id,
    ]);
    expect(rows[0]!.n).toBe(0n);

    // Another endpoint: failures, then one success clears failing_since.
    const u = await setup('/recovers', [{ status: 500 }]);
    await worker.drain();
    expect((await u.endpointRow()).failing_since).not.toBeNull();
    clock.advance(5_000);
    await worker.drain();
    expect((await u.endpointRow()).failing_since).toBeNull();
  });
});

describe('restarts', () => {
  test('a worker stopped mid-schedule loses nothing: a new worker sends the retry when it falls due', async () => {
    const t = await setup('/restart', [{ status: 500 }, { status: 500 }]);
    const clock = createFakeClock();
    const first = delivery(db.store, { clock });
    await first.drain();
    clock.advance(5_000);
    await first.drain();
    await first.stop();
    expect(t.hits()).toHaveLength(2);

    clock.advance(5 * 60_000);
    const second = delivery(db.store, { clock });
    expect(await second.drain()).toBe(1);
    await second.stop();
    expect(t.hits()).toHaveLength(3);
    expect(await t.row()).toMatchObject({ status: 'succeeded', attempt_count: 3 });
  });

  test('a worker that dies holding a lease: the delivery is sent by another worker once the lease runs out', async () => {
    const t = await setup('/crash', []);
    const clock = createFakeClock();
    // The dispatch happens, then the "crashed" worker claims the delivery and never sends it.
    const dispatcher = delivery(db.store, { clock, fetch: async () => ({ ok: false, error: 'ECONNREFUSED', unsafe: false }) });
    await dispatcher.drain();
    await dispatcher.stop();
    clock.advance(5_000);
    const claimed = await claimDueDeliveries(db.store, { now: clock.now(), limit: 10 });
    expect(claimed.map((c) => c.eventId)).toContain(t.event.id);
    const survivor = delivery(db.store, { clock });
    expect(await survivor.drain()).toBe(0);
    clock.advance(LEASE_MS);
    expect(await survivor.drain()).toBeGreaterThanOrEqual(1);
    expect(t.hits()).toHaveLength(1);
    expect(await t.row()).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    await survivor.stop();
  });
});
