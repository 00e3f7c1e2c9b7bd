import { beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, newMerchant } from '../helpers/api.ts';
import { verifyWebhook } from '../../src/index.ts';
import { createFakeClock, delivery as createWorker, emitEvent, insertSession, useWebhookApis } from '../helpers/delivery.ts';

/**
 * The events API: list and filter, an event's attempts, redelivery and replay (picked up by a
 * running worker at once), and the OpenAPI document of the webhook and event routes.
 */
const db = useTestDatabase('delivery_events_api');

const apis = useWebhookApis(db);
const { call } = apis;
let receiver: ReturnType<typeof apis.started>['receiver'];
let app: ReturnType<typeof apis.started>['app'];
const worker = () => createWorker(db.store, { box });
const emit = (merchantId: string, type?: string, sessionId?: string) => emitEvent(db.store, merchantId, type, sessionId);

beforeAll(() => {
  ({ app, receiver } = apis.started());
});

describe('events API: list, attempts, redeliver, replay', () => {
  test('list and filter by kind, payment and time; page with startingAfter', async () => {
    const m = await newMerchant(db.store);
    const sessionId = await insertSession(db.store, { merchantId: m.id });
    const first = await emit(m.id, 'payment.confirming', sessionId);
    const second = await emit(m.id, 'payment.confirmed', sessionId);
    const third = await emit(m.id, 'payment.expired');
    const all = await call('GET', '/api/v1/events', { key: m.test });
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual([third.id, second.id, first.id]);
    expect(all.body.data[1]).toMatchObject({
      event: 'payment.confirmed',
      data: second.data,
      timestamp: second.timestamp,
      livemode: false,
      paymentId: sessionId,
    });
    expect((await call('GET', '/api/v1/events?type=payment.confirmed', { key: m.test })).body.data.map((e: { id: string }) => e.id)).toEqual([second.id]);
    expect((await call('GET', `/api/v1/events?paymentId=${sessionId}`, { key: m.test })).body.data).toHaveLength(2);
    const page1 = await call('GET', '/api/v1/events?limit=2', { key: m.test });
    expect(page1.body).toMatchObject({ hasMore: true, nextCursor: second.id });
    const page2 = await call('GET', `/api/v1/events?limit=2&startingAfter=${page1.body.nextCursor}`, { key: m.test });
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([first.id]);
    expect(page2.body.hasMore).toBe(false);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call('GET', `/api/v1/events?createdAfter=${future}`, { key: m.test })).body.data).toEqual([]);
    expect((await call('GET', `/api/v1/events?createdBefore=${encodeURIComponent(first.timestamp)}`, { key: m.test })).body.data).toEqual([]);
    expect((await call('GET', '/api/v1/events?createdAfter=yesterday', { key: m.test })).status).toBe(400);
    expect((await call('GET', '/api/v1/events?limit=1000', { key: m.test })).status).toBe(400);
    // A filter or cursor that can never match is reported, as on /payments.
    expect(await call('GET', '/api/v1/events?type=payment.bogus', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^type "payment.bogus" is not an event type; one of payment\.confirming, /) },
    });
    expect(await call('GET', '/v1/events?startingAfter=evt_nope', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'startingAfter "evt_nope" is not an event of this account' },
    });
    expect((await call('GET', `/api/v1/events?startingAfter=${first.id}`, { key: m.live })).status).toBe(400);
    // Live keys and other merchants see none of it.
    expect((await call('GET', '/api/v1/events', { key: m.live })).body.data).toEqual([]);
    const other = await newMerchant(db.store, 'Other');
    expect((await call('GET', `/api/v1/events/${first.id}`, { key: other.test })).status).toBe(404);
    expect((await call('GET', `/api/v1/events/${first.id}/attempts`, { key: other.test })).status).toBe(404);
  });

  test("an event's attempts are listed with request and response; redelivery sends the same body with a new signature", async () => {
    const m = await newMerchant(db.store);
    const hook = await call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}/redeliver` } });
    const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: `${receiver.url}/redeliver-session` });
    const event = await emit(m.id, 'payment.confirmed', sessionId);
    const early = await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test });
    expect(early.body).toEqual({ error: 'the event has not been dispatched yet; it will be within a second' });
    expect(early.status).toBe(409);
    const clock = createFakeClock();
    const w = createWorker(db.store, { box, clock });
    await w.drain();

    const attempts = await call('GET', `/api/v1/events/${event.id}/attempts`, { key: m.test });
    expect(attempts.status).toBe(200);
    expect(attempts.body.data).toHaveLength(2);
    const toEndpoint = attempts.body.data.find((a: { endpointId: string | null }) => a.endpointId === hook.body.id);
    expect(toEndpoint).toMatchObject({ attemptNumber: 1, responseStatus: 200, succeeded: true, url: `${receiver.url}/redeliver` });
    expect(JSON.parse(toEndpoint.requestBody)).toEqual(event);
    expect(toEndpoint.requestHeaders['x-service-event-id']).toBe(event.id);
    expect(toEndpoint.requestHeaders).not.toHaveProperty('x-service-signature');

    const before = receiver.received.length;
    const redelivered = await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test });
    expect(redelivered.status).toBe(202);
    expect(redelivered.body.deliveries).toHaveLength(2);
    // Redeliveries are due at the database's now(): move the worker's clock past it.
    clock.set(new Date(Date.now() + 1_000));
    await w.drain();
    const again = receiver.received.slice(before);
    expect(again.map((r) => r.path).sort()).toEqual(['/redeliver', '/redeliver-session']);
    const original = receiver.received.slice(0, before).filter((r) => r.headers['x-service-event-id'] === event.id);
    for (const request of again) {
      const first = original.find((o) => o.path === request.path)!;
      expect(request.rawBody).toBe(first.rawBody);
      expect(request.headers['x-service-event-id']).toBe(event.id);
      expect(request.headers['x-service-nonce']).not.toBe(first.headers['x-service-nonce']);
    }
    await expect(
      verifyWebhook(again.find((r) => r.path === '/redeliver')!.rawBody, again.find((r) => r.path === '/redeliver')!.headers, hook.body.secret, {
        now: clock.now(),
      }),
    ).resolves.toEqual(event);

    // To one endpoint only, including one registered after the event.
    const late = await call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}/late` } });
    const one = await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test, body: { endpointId: late.body.id } });
    expect(one.status).toBe(202);
    expect(one.body.deliveries).toHaveLength(1);
    clock.set(new Date(Date.now() + 1_000));
    await w.drain();
    expect(receiver.received.filter((r) => r.path === '/late').map((r) => r.headers['x-service-event-id'])).toEqual([event.id]);
    const deliveries = await call('GET', `/api/v1/events/${event.id}/deliveries`, { key: m.test });
    expect(deliveries.body.data.map((d: { origin: string }) => d.origin).sort()).toEqual(['dispatch', 'dispatch', 'redeliver', 'redeliver', 'redeliver']);
    expect((await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test, body: { endpointId: 'we_missing' } })).status).toBe(404);
    expect((await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test, body: { endpointId: 5 } })).status).toBe(400);
    expect((await call('POST', '/api/v1/events/evt_missing/redeliver', { key: m.test })).status).toBe(404);
    await w.stop();
  });

  test('replay sends every subscribed event of a time window to one endpoint, oldest first', async () => {
    const m = await newMerchant(db.store);
    const older = await emit(m.id, 'payment.confirmed');
    await db.store.query("UPDATE events SET created_at = created_at - interval '2 days' WHERE id = $1", [older.id]);
    const inWindow = [await emit(m.id, 'payment.confirmed'), await emit(m.id, 'payment.expired'), await emit(m.id, 'payment.confirmed')];
    const w = worker();
    await w.drain(); // dispatched (no endpoints yet: no deliveries)
    const hook = await call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}/replay`, enabledEvents: ['payment.confirmed'] } });
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const replay = await call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: m.test, body: { from } });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ endpointId: hook.body.id, replayed: 2 });
    await w.drain();
    expect(
      receiver.received
        .filter((r) => r.path === '/replay')
        .map((r) => r.headers['x-service-event-id'])
        .sort(),
    ).toEqual([inWindow[0]!.id, inWindow[2]!.id].sort());

    expect((await call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: m.test, body: { from, to: from } })).status).toBe(400);
    expect((await call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: m.test, body: { from: 'last week' } })).status).toBe(400);
    expect((await call('POST', '/api/v1/webhooks/we_missing/replay', { key: m.test, body: { from } })).status).toBe(404);
    await call('PATCH', `/api/v1/webhooks/${hook.body.id}`, { key: m.test, body: { status: 'disabled' } });
    expect((await call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: m.test, body: { from } })).status).toBe(409);
    await w.stop();
  });

  test('a running worker picks up a redelivery made through the API at once (NOTIFY), without polling', async () => {
    const m = await newMerchant(db.store);
    const hook = await call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}/notify` } });
    const running = createWorker(db.store, { box, pollIntervalMs: 60_000 });
    await running.start();
    try {
      const event = await emit(m.id);
      const arrivals = () => receiver.received.filter((r) => r.path === '/notify' && r.headers['x-service-event-id'] === event.id).length;
      await expect.poll(arrivals, { timeout: 5_000 }).toBe(1);
      // Let the worker go idle (its next look is a minute away), then redeliver through the API.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await call('POST', `/api/v1/events/${event.id}/redeliver`, { key: m.test, body: { endpointId: hook.body.id } })).status).toBe(202);
      await expect.poll(arrivals, { timeout: 5_000 }).toBe(2);
    } finally {
      await running.stop();
    }
  });

  test('the OpenAPI document describes the webhook and event routes', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    const paths = Object.keys(response.json().paths);
    for (const path of [
      '/api/v1/webhooks',
      '/api/v1/webhooks/{id}',
      '/api/v1/webhooks/{id}/rotate-secret',
      '/api/v1/webhooks/{id}/replay',
      '/api/v1/events',
      '/api/v1/events/{id}/attempts',
      '/api/v1/events/{id}/redeliver',
    ]) {
      expect(paths).toContain(path);
    }
  });
});
