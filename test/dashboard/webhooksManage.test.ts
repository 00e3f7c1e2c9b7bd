import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createEndpoint, getEndpoint, getMerchantSecretInfo, listEndpoints } from '../../src/delivery/index.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, buildApi } from '../helpers/api.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';
import { delivery as createWorker } from '../helpers/delivery.ts';

/** The Webhooks pages' actions over HTTP: what each changes, what it asks first, what it records. */
const db = useTestDatabase('dashboard_webhooks_manage');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

async function setUp() {
  const { merchantId } = await newMerchantWithOwner(db.store);
  const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
  const owner = { merchantId, livemode: false };
  // An address nothing listens on: deliveries to it stay pending after a failed attempt.
  const { endpoint } = await createEndpoint(db.store, box, { ...owner, url: 'http://127.0.0.1:9/hooks' });
  const client = await signedInClient(app, developer.email);
  const actions = async () =>
    (
      await db.store.query<{ action: string }>("SELECT action FROM audit_log WHERE merchant_id = $1 AND action LIKE 'webhook.%' ORDER BY id", [merchantId])
    ).rows.map((row) => row.action);
  const ageReauth = () => db.store.query("UPDATE dashboard_sessions SET reauth_at = now() - interval '11 minutes' WHERE user_id = $1", [developer.id]);
  return { merchantId, owner, endpoint, client, actions, ageReauth, base: `/dashboard/webhooks/${endpoint.id}` };
}

describe('dashboard webhooks: managing an endpoint', () => {
  test('kinds change without a password prompt; a new URL asks for it; both are audited', async () => {
    const t = await setUp();
    await t.ageReauth();
    const kinds = await t.client.post(`${t.base}/edit`, {
      url: t.endpoint.url,
      description: 'orders',
      'event.payment.confirmed': 'on',
      'event.refund.completed': 'on',
    });
    expect(kinds.status).toBe(303);
    const changed = await getEndpoint(db.store, t.owner, t.endpoint.id);
    expect(changed).toMatchObject({ enabledEvents: ['payment.confirmed', 'refund.completed'], description: 'orders', url: t.endpoint.url });

    const moved = await t.client.post(`${t.base}/edit`, { url: 'http://127.0.0.1:10/other', 'event.*': 'on' });
    expect(moved.status).toBe(401);
    expect(moved.body).toContain('Confirm your password');
    expect((await getEndpoint(db.store, t.owner, t.endpoint.id))?.url).toBe(t.endpoint.url);
    const confirmed = await t.client.post(`${t.base}/edit`, { url: 'http://127.0.0.1:10/other', 'event.*': 'on', _reauth_password: TEST_PASSWORD });
    expect(confirmed.status).toBe(303);
    expect(await getEndpoint(db.store, t.owner, t.endpoint.id)).toMatchObject({ url: 'http://127.0.0.1:10/other', enabledEvents: ['*'] });
    expect(await t.actions()).toEqual(['webhook.endpoint_updated', 'webhook.endpoint_updated']);
  });

  test('disable ends pending deliveries, enable resumes, replay resends the window, delete removes it; each audited', async () => {
    const t = await setUp();
    const event = await db.store.transaction((sql) => appendEvent(sql, { ...t.owner, type: 'payment.confirmed', data: { id: 'ses_x' } }));
    await createWorker(db.store, { box }).runOnce(); // dispatched, first attempt refused, retry pending
    const pending = async () =>
      (await db.store.query("SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [t.endpoint.id])).rowCount;
    expect(await pending()).toBe(1);

    expect((await t.client.post(`${t.base}/status`, { status: 'disabled' })).headers.location).toBe(`${t.base}?done=disabled`);
    expect(await pending()).toBe(0);
    expect((await getEndpoint(db.store, t.owner, t.endpoint.id))?.status).toBe('disabled');
    expect((await t.client.get(`${t.base}?done=disabled`)).body).toContain('Endpoint disabled');
    await t.client.post(`${t.base}/status`, { status: 'enabled' });
    expect((await getEndpoint(db.store, t.owner, t.endpoint.id))?.status).toBe('enabled');

    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    const replayed = await t.client.post(`${t.base}/replay`, { from });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toBe(`${t.base}?done=replayed&count=1`);
    const { rows } = await db.store.query<{ event_id: string }>("SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND origin = 'replay'", [
      t.endpoint.id,
    ]);
    expect(rows.map((row) => row.event_id)).toEqual([event.id]);

    expect((await t.client.post(`${t.base}/delete`)).headers.location).toBe('/dashboard/webhooks?done=deleted');
    expect(await listEndpoints(db.store, t.owner)).toEqual([]);
    expect((await t.client.get(t.base)).status).toBe(404);
    expect(await t.actions()).toEqual(['webhook.endpoint_disabled', 'webhook.endpoint_updated', 'webhook.redelivered', 'webhook.endpoint_disabled']);
  });

  test('the session secret of the mode shown rotates once the password is confirmed; the secret is on that answer only', async () => {
    const t = await setUp();
    await t.ageReauth();
    const asked = await t.client.post('/dashboard/webhook-secret/rotate', { expiresIn: '0' });
    expect(asked.status).toBe(401);
    expect(await getMerchantSecretInfo(db.store, t.owner)).toMatchObject({ rotatedAt: null });
    const rotated = await t.client.post('/dashboard/webhook-secret/rotate', { expiresIn: '0', _reauth_password: TEST_PASSWORD });
    expect(rotated.status).toBe(200);
    const secret = /id="new-secret">(whsec_[0-9A-Za-z]+)</.exec(rotated.body)?.[1];
    expect(secret).toMatch(/^whsec_/);
    const info = await getMerchantSecretInfo(db.store, t.owner);
    expect(info?.rotatedAt).toBeInstanceOf(Date);
    expect(info?.previousSecretExpiresAt).toBeNull(); // expiresIn 0: the old one stopped at once
    expect(await getMerchantSecretInfo(db.store, { ...t.owner, livemode: true }).then((live) => live?.rotatedAt ?? null)).toBeNull();
    expect((await t.client.get('/dashboard/webhooks')).body).not.toContain(secret!);
    expect(await t.actions()).toEqual(['webhook.secret_rotated']);
  });
});
