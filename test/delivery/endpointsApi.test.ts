import { beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, newMerchant } from '../helpers/api.ts';
import { verifyWebhook } from '../../src/index.ts';
import { delivery as createWorker, emitEvent, useWebhookApis } from '../helpers/delivery.ts';

/**
 * The webhook endpoints API: register (the secret shown once), list, get, update, rotate,
 * delete; idempotent retries; what each key may do.
 */
const db = useTestDatabase('delivery_endpoints_api');

const apis = useWebhookApis(db);
const { call, strictCall } = apis;
let receiver: ReturnType<typeof apis.started>['receiver'];
const worker = () => createWorker(db.store, { box });
const emit = (merchantId: string, type?: string, sessionId?: string) => emitEvent(db.store, merchantId, type, sessionId);

beforeAll(() => {
  ({ receiver } = apis.started());
});

async function countRows(table: string): Promise<bigint> {
  const { rows } = await db.store.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`);
  return rows[0]!.n;
}

describe('webhook endpoints API', () => {
  test('register (secret shown once), list, get, update, rotate, delete', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/webhooks', {
      key: m.test,
      body: { url: `${receiver.url}/hooks`, enabledEvents: ['payment.confirmed', 'refund.completed'], description: 'orders' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      url: `${receiver.url}/hooks`,
      enabledEvents: ['payment.confirmed', 'refund.completed'],
      description: 'orders',
      status: 'enabled',
      livemode: false,
    });
    expect(created.body.id).toMatch(/^we_/);
    expect(created.body.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    const id = created.body.id as string;

    const listed = await call('GET', '/api/v1/webhooks', { key: m.test });
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).not.toHaveProperty('secret');
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    const { rows } = await db.store.query('SELECT secret_sealed FROM webhook_endpoints WHERE id = $1', [id]);
    expect(rows[0]!.secret_sealed).not.toContain(created.body.secret.slice(6));
    expect(box.open(rows[0]!.secret_sealed)).toBe(created.body.secret);

    expect((await call('GET', `/v1/webhooks/${id}`, { key: m.test, as: 'x-api-key' })).body.id).toBe(id);
    // A live key sees live endpoints only; another merchant sees nothing.
    expect((await call('GET', `/api/v1/webhooks/${id}`, { key: m.live })).status).toBe(404);
    const other = await newMerchant(db.store, 'Other');
    expect((await call('GET', `/api/v1/webhooks/${id}`, { key: other.test })).status).toBe(404);
    expect((await call('DELETE', `/api/v1/webhooks/${id}`, { key: other.test })).status).toBe(404);

    const patched = await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: { enabledEvents: ['*'], description: null } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabledEvents: ['*'], description: null, status: 'enabled' });
    expect(await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: {} })).toMatchObject({
      status: 400,
      body: { error: 'body must not be empty: send at least one field' },
    });
    expect(await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: { enabledEvents: [] } })).toMatchObject({
      status: 400,
      body: { error: 'enabledEvents must not be empty' },
    });
    const disabled = await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: { status: 'disabled' } });
    expect(disabled.body).toMatchObject({ status: 'disabled', disabledReason: 'disabled by the merchant' });
    const enabled = await call('PATCH', `/api/v1/webhooks/${id}`, { key: m.test, body: { status: 'enabled' } });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabledReason: null, disabledAt: null });

    // expiresIn 0: the old secret stops at once (a leaked one); deliveries carry one signature.
    const rotated = await call('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key: m.test, body: { expiresIn: 0 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect(rotated.body.previousSecretExpiresAt).toBeNull();
    const before = receiver.received.length;
    const event = await emit(m.id);
    await worker().drain();
    const got = receiver.received.slice(before).find((r) => r.headers['x-service-event-id'] === event.id)!;
    expect(got.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    await expect(verifyWebhook(got.rawBody, got.headers, rotated.body.secret)).resolves.toMatchObject({ id: event.id });
    await expect(verifyWebhook(got.rawBody, got.headers, created.body.secret)).rejects.toThrow('signature does not match');

    const deliveries = await call('GET', `/api/v1/webhooks/${id}/deliveries`, { key: m.test });
    expect(deliveries.body).toMatchObject({
      data: [{ eventId: event.id, endpointId: id, status: 'succeeded', attemptCount: 1, origin: 'dispatch' }],
      hasMore: false,
      nextCursor: null,
    });
    // Paged like every list: two more events, pages of two, newest first, no delivery twice.
    const more = [await emit(m.id), await emit(m.id)];
    await worker().drain();
    const page1 = await call('GET', `/api/v1/webhooks/${id}/deliveries?limit=2`, { key: m.test });
    expect(page1.body).toMatchObject({ hasMore: true, nextCursor: page1.body.data[1].id });
    const page2 = await call('GET', `/v1/webhooks/${id}/deliveries?limit=2&startingAfter=${page1.body.nextCursor}`, { key: m.test });
    expect(page2.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect([...page1.body.data, ...page2.body.data].map((d: { eventId: string }) => d.eventId).sort()).toEqual([event.id, ...more.map((e) => e.id)].sort());
    expect(await call('GET', `/api/v1/webhooks/${id}/deliveries?startingAfter=whd_nope`, { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'startingAfter "whd_nope" is not a delivery to this endpoint' },
    });

    expect((await call('DELETE', `/api/v1/webhooks/${id}`, { key: m.test })).body).toEqual({ id, deleted: true });
    expect((await call('GET', `/api/v1/webhooks/${id}`, { key: m.test })).status).toBe(404);
    expect((await call('GET', '/api/v1/webhooks', { key: m.test })).body.data).toEqual([]);
  });

  test.each([
    [{ url: 'ftp://example.com/hook' }, 'url: webhook URL must use http or https, not ftp'],
    [{ url: 'not a url' }, 'url: webhook URL must be an absolute http or https URL'],
    [{ url: 'https://user:pw@example.com/' }, 'url: webhook URL must not carry credentials'],
    [{ url: 'http://169.254.169.254/latest/meta-data' }, 'url: webhook URL host 169.254.169.254 resolves to a private, loopback or link-local address'],
    [{ url: 'http://10.1.2.3/hook' }, 'url: webhook URL host 10.1.2.3 resolves to a private, loopback or link-local address'],
    [{ url: 'http://[::1]:8080/hook' }, 'url: webhook URL host ::1 resolves to a private, loopback or link-local address'],
    [{ url: 'http://localhost:8080/hook' }, 'url: webhook URL host localhost resolves to a private, loopback or link-local address'],
    [{ url: 'http://[::ffff:127.0.0.1]/hook' }, 'url: webhook URL host ::ffff:7f00:1 resolves to a private, loopback or link-local address'],
    [{ url: 'https://example.com/', enabledEvents: ['payment.exploded'] }, 'enabledEvents.0 must be one of'],
    [{ url: 'https://example.com/', enabledEvents: [] }, 'enabledEvents'],
    [{ url: 'https://example.com/', secret: 'mine' }, 'unknown field "secret"'],
    [{}, 'missing required field "url"'],
  ])('POST /webhooks %j is a 400 that writes nothing', async (body, message) => {
    const m = await newMerchant(db.store);
    const before = await countRows('webhook_endpoints');
    const answer = await strictCall('POST', '/api/v1/webhooks', { key: m.test, body });
    expect(answer.status).toBe(400);
    expect(Object.keys(answer.body)).toEqual(['error']);
    expect(answer.body.error).toContain(message);
    expect(await countRows('webhook_endpoints')).toBe(before);
  });

  test('an idempotent retry of POST /webhooks replays the endpoint without its secret, which is never stored in plaintext', async () => {
    const m = await newMerchant(db.store);
    const headers = { 'idempotency-key': `hook-${Date.now()}` };
    const first = await call('POST', '/api/v1/webhooks', { key: m.test, headers, body: { url: `${receiver.url}/idem` } });
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(/^whsec_/);
    const again = await call('POST', '/api/v1/webhooks', { key: m.test, headers, body: { url: `${receiver.url}/idem` } });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(again.body).not.toHaveProperty('secret');
    expect((await call('GET', '/api/v1/webhooks', { key: m.test })).body.data).toHaveLength(1);
    const rotated = await call('POST', `/api/v1/webhooks/${first.body.id}/rotate-secret`, {
      key: m.test,
      headers: { 'idempotency-key': `rotate-${Date.now()}` },
    });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    const { rows } = await db.store.query('SELECT response_body FROM idempotency_keys WHERE response_body IS NOT NULL');
    const stored = rows.map((r) => r.response_body).join('\n');
    expect(stored).toContain(first.body.id);
    expect(stored).not.toContain(first.body.secret);
    expect(stored).not.toContain(rotated.body.secret);
  });

  test('auth: no key 401, read-only key 403 on writes, can read', async () => {
    const m = await newMerchant(db.store);
    expect((await call('POST', '/api/v1/webhooks', { body: { url: `${receiver.url}/x` } })).status).toBe(401);
    expect((await call('POST', '/api/v1/webhooks', { key: m.readOnly, body: { url: `${receiver.url}/x` } })).status).toBe(403);
    expect((await call('GET', '/api/v1/webhooks', { key: m.readOnly })).status).toBe(200);
    expect((await call('GET', '/api/v1/events', { key: m.readOnly })).status).toBe(200);
    expect((await call('POST', '/api/v1/events/evt_x/redeliver', { key: m.readOnly })).status).toBe(403);
  });
});
