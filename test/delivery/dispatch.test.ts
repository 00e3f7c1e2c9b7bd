import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createMemoryNonceCache, verifyWebhook } from '../../src/index.ts';
import { createEndpoint, createHttpTransport } from '../../src/delivery/index.ts';
import { listAttempts } from '../../src/delivery/log.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { box, confirmSession, createFakeClock, delivery, insertSession, merchant } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

const db = useTestDatabase('delivery_dispatch');
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function hmac(secret: string, headers: Record<string, unknown>, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${headers['x-service-timestamp']}.${headers['x-service-nonce']}.${body}`).digest('hex')}`;
}

describe('dispatch and signing', () => {
  test("a payment's event reaches the session webhookUrl (merchant secret) and a registered endpoint (its own secret), signed per spec §6.3", async () => {
    const { merchant: m, webhookSecrets } = await merchant(db.store);
    const webhookSecret = webhookSecrets.sandbox;
    const { secret: endpointSecret, endpoint } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}/endpoint` });
    const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: `${receiver.url}/session` });
    const before = receiver.received.length;
    const envelope = await confirmSession(db.store, { merchantId: m.id, sessionId });
    const clock = createFakeClock();
    const worker = delivery(db.store, { clock });
    expect(await worker.drain()).toBe(2);
    await worker.stop();

    const got = receiver.received.slice(before);
    expect(got.map((r) => r.path).sort()).toEqual(['/endpoint', '/session']);
    for (const request of got) {
      const secret = request.path === '/session' ? webhookSecret : endpointSecret;
      expect(request.headers['x-service-signature']).toBe(hmac(secret, request.headers, request.rawBody));
      expect(request.headers['x-service-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000)));
      expect(request.headers['x-service-event-id']).toBe(envelope.id);
      expect(request.headers['content-type']).toBe('application/json');
      const event = await verifyWebhook(request.rawBody, request.headers, secret, { now: clock.now() });
      expect(event).toEqual(envelope);
      expect(Object.keys(JSON.parse(request.rawBody)).sort()).toEqual(['data', 'event', 'id', 'livemode', 'timestamp']);
      // The other target's secret does not verify it.
      await expect(
        verifyWebhook(request.rawBody, request.headers, request.path === '/session' ? endpointSecret : webhookSecret, { now: clock.now() }),
      ).rejects.toThrow('signature does not match');
    }
    expect(got[0]!.headers['x-service-nonce']).not.toBe(got[1]!.headers['x-service-nonce']);

    // The helper refuses the same real delivery tampered, stale, incomplete or replayed.
    const real = got.find((r) => r.path === '/session')!;
    const verify = (body: string, headers: Record<string, unknown>, options: Parameters<typeof verifyWebhook>[3] = {}) =>
      verifyWebhook(body, headers as never, webhookSecret, { now: clock.now(), ...options }).then(
        () => 'accepted',
        (error) => error.reason,
      );
    expect(await verify(real.rawBody.replace('"25.00"', '"2500.00"'), real.headers)).toBe('signature_mismatch');
    expect(await verify(real.rawBody, real.headers, { now: new Date(clock.now().getTime() + 301_000) })).toBe('timestamp_out_of_tolerance');
    for (const name of ['x-service-signature', 'x-service-timestamp', 'x-service-nonce']) {
      expect(await verify(real.rawBody, { ...real.headers, [name]: undefined })).toBe('missing_header');
    }
    const nonceCache = createMemoryNonceCache();
    expect(await verify(real.rawBody, real.headers, { nonceCache })).toBe('accepted');
    expect(await verify(real.rawBody, real.headers, { nonceCache })).toBe('nonce_reused');

    const { rows: attempts } = await db.store.query('SELECT * FROM webhook_attempts WHERE event_id = $1 ORDER BY url', [envelope.id]);
    expect(attempts).toHaveLength(2);
    expect(attempts.map((a) => [a.endpoint_id, a.attempt_number, a.response_status, a.succeeded])).toEqual([
      [endpoint.id, 1, 200, true],
      [null, 1, 200, true],
    ]);
    // The body sent is the event's frozen body; the attempt row does not copy it (migration 057).
    const { rows: frozen } = await db.store.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [envelope.id]);
    expect(frozen[0]!.body).toBe(got.find((r) => r.path === '/endpoint')!.rawBody);
    expect(attempts.map((a) => a.request_body)).toEqual([null, null]);
    // The log keeps the request but never its signature (a replayable credential for 5 minutes).
    expect(attempts[0]!.request_headers['x-service-event-id']).toBe(envelope.id);
    for (const attempt of attempts) expect(attempt.request_headers).not.toHaveProperty('x-service-signature');
    const { rows: events } = await db.store.query('SELECT dispatched_at, body FROM events WHERE id = $1', [envelope.id]);
    expect(events[0]!.body).toBe(got[0]!.rawBody);
    // The attempt log shows the event's body for the new rows, and its own copy for a row written
    // before migration 057.
    await db.store.query("UPDATE webhook_attempts SET request_body = 'a copy from before 057' WHERE event_id = $1 AND endpoint_id IS NULL", [envelope.id]);
    const logged = await listAttempts(db.store, { merchantId: m.id, livemode: false }, envelope.id);
    expect(logged.map((a) => [a.endpointId, a.requestBody]).sort()).toEqual(
      [
        [endpoint.id, frozen[0]!.body],
        [null, 'a copy from before 057'],
      ].sort(),
    );
  });

  test('two workers racing over the same outbox make exactly one delivery per (event, target)', async () => {
    const { merchant: m } = await merchant(db.store);
    await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}/race` });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: `${receiver.url}/race-session` });
      ids.push((await confirmSession(db.store, { merchantId: m.id, sessionId })).id);
    }
    const before = receiver.received.length;
    const a = delivery(db.store, { concurrency: 8 });
    const b = delivery(db.store, { concurrency: 8 });
    await Promise.all([a.drain(), b.drain(), a.drain()]);
    await Promise.all([a.stop(), b.stop()]);
    const got = receiver.received.slice(before).filter((r) => r.path.startsWith('/race'));
    expect(got).toHaveLength(80);
    const keys = new Set(got.map((r) => `${r.path} ${r.headers['x-service-event-id']}`));
    expect(keys.size).toBe(80);
    const { rows } = await db.store.query<{ n: bigint }>("SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ANY($1) AND origin = 'dispatch'", [
      ids,
    ]);
    expect(rows[0]!.n).toBe(80n);
  });

  test('sandbox events go to test-mode endpoints only, live to live, and enabledEvents filters kinds', async () => {
    const { merchant: m } = await merchant(db.store);
    const { endpoint: testAll } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}/test-all` });
    const { endpoint: liveAll } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: true, url: `${receiver.url}/live-all` });
    const { endpoint: liveExpired } = await createEndpoint(db.store, box, {
      merchantId: m.id,
      livemode: true,
      url: `${receiver.url}/live-expired`,
      enabledEvents: ['payment.expired'],
    });
    const other = await merchant(db.store, 'Someone else');
    await createEndpoint(db.store, box, { merchantId: other.merchant.id, livemode: true, url: `${receiver.url}/other` });
    const sandbox = await store(false, 'payment.confirmed');
    const live = await store(true, 'payment.confirmed');
    const liveExpiry = await store(true, 'payment.expired');
    await delivery(db.store).drain();
    const { rows } = await db.store.query<{ event_id: string; endpoint_id: string }>(
      'SELECT event_id, endpoint_id FROM webhook_deliveries WHERE event_id = ANY($1) ORDER BY event_id, endpoint_id',
      [[sandbox, live, liveExpiry]],
    );
    const targets = (eventId: string) =>
      rows
        .filter((r) => r.event_id === eventId)
        .map((r) => r.endpoint_id)
        .sort();
    expect(targets(sandbox)).toEqual([testAll.id]);
    expect(targets(live)).toEqual([liveAll.id]);
    expect(targets(liveExpiry)).toEqual([liveAll.id, liveExpired.id].sort());

    async function store(livemode: boolean, type: string) {
      return db.store.transaction(async (sql) => (await appendEvent(sql, { merchantId: m.id, livemode, type, data: { id: 'ses_x' } })).id);
    }
  });

  test('an event fanning out to more endpoints than the worker has room for leases only what it can send; the rest stay claimable', async () => {
    const { merchant: m } = await merchant(db.store);
    for (const n of [1, 2, 3]) await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}/fan-${n}` });
    const event = await db.store.transaction((sql) => appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.confirmed', data: {} }));
    const worker = delivery(db.store, { concurrency: 1 });
    expect(await worker.runOnce()).toBe(1);
    const { rows } = await db.store.query(
      "SELECT count(*) FILTER (WHERE status = 'pending' AND locked_until IS NULL) AS unleased FROM webhook_deliveries WHERE event_id = $1",
      [event.id],
    );
    expect(rows[0]!.unleased).toBe(2n);
    expect(await worker.drain()).toBe(2);
    expect(
      receiver.received
        .filter((r) => r.headers['x-service-event-id'] === event.id)
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/fan-1', '/fan-2', '/fan-3']);
    await worker.stop();
  });

  test('refund events are delivered with their envelope like payment events', async () => {
    const { merchant: m, webhookSecrets } = await merchant(db.store);
    const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: `${receiver.url}/refunds` });
    const envelope = await db.store.transaction((sql) =>
      appendEvent(sql, {
        merchantId: m.id,
        livemode: false,
        type: 'refund.requested',
        sessionId,
        refundId: 'rf_1',
        data: { id: 'rf_1', paymentId: sessionId, amount: '5.00', status: 'requested' },
      }),
    );
    const clock = createFakeClock();
    await delivery(db.store, { clock }).drain();
    const got = receiver.received.find((r) => r.headers['x-service-event-id'] === envelope.id)!;
    expect(await verifyWebhook(got.rawBody, got.headers, webhookSecrets.sandbox, { now: clock.now() })).toEqual(envelope);
  });
});

describe('transport safety', () => {
  test('a private address is refused at delivery time when not allowed: nothing is sent, the attempt says why, no retry', async () => {
    const { merchant: m } = await merchant(db.store);
    const { endpoint } = await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${receiver.url}/private` });
    const { endpoint: named } = await createEndpoint(db.store, box, {
      merchantId: m.id,
      livemode: false,
      url: `${receiver.url.replace('127.0.0.1', 'localhost')}/private-name`,
    });
    const before = receiver.received.length;
    const event = await db.store.transaction((sql) => appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.expired', data: {} }));
    await delivery(db.store, { config: { webhookAllowPrivate: false, webhookAllowPrivateSandbox: false } }).drain();
    expect(receiver.received.length).toBe(before);
    const { rows } = await db.store.query(
      'SELECT d.endpoint_id, d.status, d.attempt_count, a.error FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.event_id = $1 ORDER BY d.endpoint_id',
      [event.id],
    );
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint_id, r]));
    expect(byEndpoint[endpoint.id]).toMatchObject({ status: 'failed', attempt_count: 1, error: '127.0.0.1 is a private, loopback or link-local address' });
    expect(byEndpoint[named.id]).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(byEndpoint[named.id].error).toMatch(/resolves to a private, loopback or link-local address/);
  });

  test('redirects are not followed, response bodies are read only up to 2 KiB, and a hanging receiver times out', async () => {
    const target = await startReceiver();
    const special = await startReceiver((request) => {
      if (request.path === '/redirect') return { status: 302, headers: { location: `${target.url}/landed` } };
      if (request.path === '/big') return { status: 500, body: 'x'.repeat(100_000) };
      return 'hang';
    });
    try {
      const { merchant: m } = await merchant(db.store);
      for (const path of ['/redirect', '/big', '/hang'])
        await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url: `${special.url}${path}` });
      const event = await db.store.transaction((sql) => appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.failed', data: {} }));
      const transport = createHttpTransport({ allowPrivate: true, timeoutMs: 300 });
      await delivery(db.store, { fetch: transport }).runOnce();
      await transport.close();
      expect(target.received).toHaveLength(0);
      const { rows } = await db.store.query('SELECT url, response_status, response_body_excerpt, error, succeeded FROM webhook_attempts WHERE event_id = $1', [
        event.id,
      ]);
      const byPath = Object.fromEntries(rows.map((r) => [new URL(r.url).pathname, r]));
      expect(byPath['/redirect']).toMatchObject({ response_status: 302, succeeded: false, error: 'HTTP 302' });
      expect(byPath['/big']!.response_body_excerpt).toBe('x'.repeat(2048));
      expect(byPath['/hang']).toMatchObject({ response_status: null, succeeded: false, error: 'timed out after 300 ms' });
      const { rows: deliveries } = await db.store.query('SELECT status FROM webhook_deliveries WHERE event_id = $1', [event.id]);
      expect(deliveries.map((d) => d.status)).toEqual(['pending', 'pending', 'pending']);
    } finally {
      await special.close();
      await target.close();
    }
  });

  test('a hanging receiver with a backlog takes at most half the slots: another merchant is served meanwhile', async () => {
    const slow = await startReceiver(() => 'hang');
    const transport = createHttpTransport({ allowPrivate: true, timeoutMs: 4_000 });
    const worker = delivery(db.store, { concurrency: 4, fetch: transport, pollIntervalMs: 100 });
    try {
      const stuck = await merchant(db.store, 'Stuck');
      await createEndpoint(db.store, box, { merchantId: stuck.merchant.id, livemode: false, url: `${slow.url}/stuck` });
      for (let i = 0; i < 10; i++)
        await db.store.transaction((sql) => appendEvent(sql, { merchantId: stuck.merchant.id, livemode: false, type: 'payment.confirmed', data: { i } }));
      await worker.start();
      await slow.waitFor(2, 5_000);
      const healthy = await merchant(db.store, 'Healthy');
      await createEndpoint(db.store, box, { merchantId: healthy.merchant.id, livemode: false, url: `${receiver.url}/healthy` });
      const started = Date.now();
      const event = await db.store.transaction((sql) =>
        appendEvent(sql, { merchantId: healthy.merchant.id, livemode: false, type: 'payment.confirmed', data: {} }),
      );
      await expect.poll(() => receiver.received.some((r) => r.headers['x-service-event-id'] === event.id), { timeout: 3_000, interval: 20 }).toBe(true);
      expect(Date.now() - started).toBeLessThan(3_000); // well before the stuck attempts time out
      expect(slow.received).toHaveLength(2);
    } finally {
      await worker.stop();
      await transport.close();
      await slow.close();
    }
  });

  test('started, the worker delivers a new event within moments without being polled by the test (NOTIFY wake-up)', async () => {
    const { merchant: m, webhookSecrets } = await merchant(db.store);
    const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: `${receiver.url}/live-loop` });
    const worker = delivery(db.store, { pollIntervalMs: 60_000 });
    await worker.start();
    try {
      const before = receiver.received.length;
      const envelope = await confirmSession(db.store, { merchantId: m.id, sessionId });
      await receiver.waitFor(before + 1, 5_000);
      const got = receiver.received[before]!;
      expect(got.headers['x-service-event-id']).toBe(envelope.id);
      expect(await verifyWebhook(got.rawBody, got.headers, webhookSecrets.sandbox)).toEqual(envelope);
    } finally {
      await worker.stop();
    }
  });
});
