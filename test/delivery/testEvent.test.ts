import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { verifyWebhook } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, createClient, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';
import { delivery as createWorker, logger } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

/** POST /webhooks/{id}/test (sendTestEvent, src/delivery/manage.ts), which the dashboard's button calls too. */
const db = useTestDatabase('delivery_test_event');
let app: FastifyInstance;
let call: ReturnType<typeof createClient>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  app = createHttp({
    store: db.store,
    logger,
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config: loadConfig({ LOG_LEVEL: 'silent' }),
    box,
    rateLimits: GENEROUS_LIMITS,
  });
  call = createClient(app, await createOpenApiChecker(app));
  receiver = await startReceiver();
});
afterAll(async () => {
  await Promise.all([app.close(), receiver.close()]);
});

describe('POST /webhooks/{id}/test', () => {
  test('sends a signed webhook_endpoint.test event to that endpoint only, whatever it subscribes to; the attempt says one signature was sent', async () => {
    const m = await newMerchant(db.store);
    const register = (path: string, enabledEvents: string[]) =>
      call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}${path}`, enabledEvents } });
    const target = await register('/target', ['refund.completed']);
    const bystander = await register('/bystander', ['*']);
    expect(bystander.status).toBe(201);

    const sent = await call('POST', `/api/v1/webhooks/${target.body.id}/test`, { key: m.test });
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ endpointId: target.body.id, eventId: expect.stringMatching(/^evt_/), deliveryId: expect.stringMatching(/^whd_/) });
    const before = receiver.received.length;
    await createWorker(db.store, { box }).drain();
    const arrived = receiver.received.slice(before);
    expect(arrived.map((request) => request.path)).toEqual(['/target']);
    const event = await verifyWebhook(arrived[0]!.rawBody, arrived[0]!.headers, target.body.secret as string);
    expect(event).toMatchObject({ id: sent.body.eventId, event: 'webhook_endpoint.test', livemode: false, data: { test: true, endpointId: target.body.id } });

    // It is an event like any other: listed (and filterable), with its attempt.
    const listed = await call('GET', '/api/v1/events?type=webhook_endpoint.test', { key: m.test });
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([sent.body.eventId]);
    const attempts = await call('GET', `/api/v1/events/${sent.body.eventId}/attempts`, { key: m.test });
    expect(attempts.body.data).toHaveLength(1);
    expect(attempts.body.data[0]).toMatchObject({ deliveryId: sent.body.deliveryId, succeeded: true, signaturesSent: 1 });
    expect(attempts.body.data[0].requestHeaders).not.toHaveProperty('x-service-signature');
  });

  test('refusals: a read-only key 403, another merchant or mode 404, a disabled endpoint 409; none makes an event', async () => {
    const m = await newMerchant(db.store);
    const other = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/webhooks', { key: m.test, body: { url: `${receiver.url}/r` } });
    const id = created.body.id as string;
    const events = async () => (await db.store.query('SELECT 1 FROM events WHERE merchant_id = $1', [m.id])).rowCount;
    expect((await call('POST', `/api/v1/webhooks/${id}/test`, { key: m.readOnly })).status).toBe(403);
    expect((await call('POST', `/api/v1/webhooks/${id}/test`, { key: other.test })).status).toBe(404);
    expect((await call('POST', `/api/v1/webhooks/${id}/test`, { key: m.live })).status).toBe(404);
    await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: { status: 'disabled' } });
    const disabled = await call('POST', `/api/v1/webhooks/${id}/test`, { key: m.test });
    expect(disabled.status).toBe(409);
    expect(disabled.body.error).toContain('disabled');
    expect(await events()).toBe(0);
  });
});
