import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createApiKey } from '../../src/accounts/index.ts';
import { createEndpoint, getEndpoint, listEndpoints, sendTestEvent } from '../../src/delivery/index.ts';
import { escapeHtml } from '../../src/dashboard/html.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, buildApi } from '../helpers/api.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';
import { delivery as createWorker } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

/** Fast HTTP-level negatives of the Webhooks pages (the Chromium flows are in webhooks.test.ts). */
const db = useTestDatabase('dashboard_webhooks_access');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

async function merchantWithTeam() {
  const { merchantId, owner } = await newMerchantWithOwner(db.store);
  const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
  const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
  const { endpoint } = await createEndpoint(db.store, box, { merchantId, livemode: false, url: 'https://hooks.example.com/a' });
  return { merchantId, owner, developer, viewer, endpoint };
}

const secretState = async (id: string) =>
  (await db.store.query<{ secret_sealed: string }>('SELECT secret_sealed FROM webhook_endpoints WHERE id = $1', [id])).rows[0]!.secret_sealed;

describe('dashboard webhooks: who may do what', () => {
  test('a viewer reads the pages but a forged create or rotate with a valid CSRF token is a 403 that changes nothing', async () => {
    const team = await merchantWithTeam();
    const viewer = await signedInClient(app, team.viewer.email);
    const list = await viewer.get('/dashboard/webhooks');
    expect(list.status).toBe(200);
    expect(list.body).toContain('https://hooks.example.com/a');
    expect(list.body).not.toContain('Add endpoint');
    expect(viewer.csrfToken).toBeTruthy();

    const created = await viewer.post('/dashboard/webhooks', { url: 'https://hooks.example.com/b', 'event.*': 'on' });
    expect(created.status).toBe(403);
    const before = await secretState(team.endpoint.id);
    const rotated = await viewer.post(`/dashboard/webhooks/${team.endpoint.id}/rotate`, { expiresIn: '0' });
    expect(rotated.status).toBe(403);
    expect(await viewer.post('/dashboard/webhook-secret/rotate', { expiresIn: '0' }).then((answer) => answer.status)).toBe(403);
    expect(await viewer.post(`/dashboard/webhooks/${team.endpoint.id}/test`).then((answer) => answer.status)).toBe(403);
    expect(await secretState(team.endpoint.id)).toBe(before);
    expect((await listEndpoints(db.store, { merchantId: team.merchantId, livemode: false })).map((endpoint) => endpoint.url)).toEqual([
      'https://hooks.example.com/a',
    ]);
    const audit = await db.store.query("SELECT 1 FROM audit_log WHERE merchant_id = $1 AND action LIKE 'webhook.%'", [team.merchantId]);
    expect(audit.rowCount).toBe(0);
  });

  test("another merchant's endpoint and delivery ids answer 404, for reads and for every action", async () => {
    const mine = await merchantWithTeam();
    const theirs = await merchantWithTeam();
    const developer = await signedInClient(app, mine.developer.email);
    const other = theirs.endpoint.id;
    expect((await developer.get(`/dashboard/webhooks/${other}`)).status).toBe(404);
    for (const action of ['rotate', 'test', 'status', 'delete', 'edit', 'replay']) {
      const answer = await developer.post(`/dashboard/webhooks/${other}/${action}`, { url: 'https://x.example.com', from: '2020-01-01T00:00', expiresIn: '0' });
      expect(answer.status, action).toBe(404);
    }
    expect((await developer.get(`/dashboard/webhooks/${mine.endpoint.id}/deliveries/whd_nope`)).status).toBe(404);
    expect((await developer.post(`/dashboard/webhooks/${mine.endpoint.id}/deliveries/whd_nope/resend`)).status).toBe(404);
    // Their endpoint is untouched: still enabled, same secret.
    const [stillThere] = await listEndpoints(db.store, { merchantId: theirs.merchantId, livemode: false });
    expect(stillThere?.status).toBe('enabled');
  });

  test("in live mode a private-address URL shows the API's own refusal and creates nothing", async () => {
    const team = await merchantWithTeam();
    const developer = await signedInClient(app, team.developer.email);
    await developer.post('/dashboard/mode', { livemode: 'true', next: '/dashboard/webhooks' });
    const url = 'http://10.1.2.3/hook';
    const page = await developer.post('/dashboard/webhooks', { url, description: 'internal', 'event.*': 'on' });
    // The API's answer to the same request with a live key, word for word.
    const liveKey = (await createApiKey(db.store, { merchantId: team.merchantId, livemode: true })).secret;
    const api = await app.inject({ method: 'POST', url: '/api/v1/webhooks', headers: { authorization: `Bearer ${liveKey}` }, payload: { url } });
    expect(api.statusCode).toBe(400);
    const refusal = api.json().error as string;
    expect(refusal).toContain('private');
    expect(page.status).toBe(400);
    expect(page.body).toContain(escapeHtml(refusal));
    expect(page.body).toContain('value="http://10.1.2.3/hook"'); // the form keeps the input
    expect(await listEndpoints(db.store, { merchantId: team.merchantId, livemode: true })).toEqual([]);
    // An unknown event kind is refused the same way, and nothing is made.
    const unknownKind = await developer.post('/dashboard/webhooks', { url: 'https://hooks.example.com/live', 'event.payment.nope': 'on' });
    expect(unknownKind.status).toBe(400);
    expect(unknownKind.body).toContain('is not an event kind');
    expect(await listEndpoints(db.store, { merchantId: team.merchantId, livemode: true })).toEqual([]);
  });

  test('rotating without a recent password asks for it, changes nothing, then rotates once it is given', async () => {
    const team = await merchantWithTeam();
    const developer = await signedInClient(app, team.developer.email);
    await db.store.query("UPDATE dashboard_sessions SET reauth_at = now() - interval '11 minutes' WHERE user_id = $1", [team.developer.id]);
    const before = await secretState(team.endpoint.id);
    const asked = await developer.post(`/dashboard/webhooks/${team.endpoint.id}/rotate`, { expiresIn: '3600' });
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('Confirm your password');
    expect(asked.body).toContain('name="expiresIn" value="3600"'); // the form is replayed with the password
    expect(await secretState(team.endpoint.id)).toBe(before);
    // Creating an endpoint asks too.
    const create = await developer.post('/dashboard/webhooks', { url: 'https://hooks.example.com/new', 'event.*': 'on' });
    expect(create.status).toBe(401);
    expect(await listEndpoints(db.store, { merchantId: team.merchantId, livemode: false })).toHaveLength(1);

    const done = await developer.post(`/dashboard/webhooks/${team.endpoint.id}/rotate`, { expiresIn: '3600', _reauth_password: TEST_PASSWORD });
    expect(done.status).toBe(200);
    const secret = /id="new-secret">(whsec_[0-9A-Za-z]+)</.exec(done.body)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(await secretState(team.endpoint.id)).not.toBe(before);
    // Shown once: the endpoint page never shows it again.
    expect((await developer.get(`/dashboard/webhooks/${team.endpoint.id}`)).body).not.toContain(secret!);
    const audit = await db.store.query<{ action: string; actor: string; details: { expiresIn: number } }>(
      'SELECT action, actor, details FROM audit_log WHERE merchant_id = $1 AND target = $2',
      [team.merchantId, team.endpoint.id],
    );
    expect(audit.rows).toEqual([{ action: 'webhook.secret_rotated', actor: team.developer.email, details: { expiresIn: 3600 } }]);
  });

  test('an attempt shows a viewer how it went but not the request (like a read-only key); a developer also the request; nobody a signature', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    // The receiver echoes the request's headers: the excerpt must not show the signature either.
    const receiver = await startReceiver((request) => ({ status: 200, body: JSON.stringify(request.headers) }));
    try {
      const owner = { merchantId, livemode: false };
      const { endpoint } = await createEndpoint(db.store, box, { ...owner, url: `${receiver.url}/hooks` });
      const { deliveryId } = await sendTestEvent(db.store, owner, endpoint.id);
      await createWorker(db.store, { box }).drain();
      await receiver.waitFor(1);
      const signature = String(receiver.received[0]!.headers['x-service-signature']);
      const path = `/dashboard/webhooks/${endpoint.id}/deliveries/${deliveryId}`;
      const asViewer = await (await signedInClient(app, viewer.email)).get(path);
      const asDeveloper = await (await signedInClient(app, developer.email)).get(path);
      expect(asViewer.status).toBe(200);
      expect(asViewer.body).toContain('Attempt 1: delivered (HTTP 200)');
      expect(asViewer.body).toContain('1 signature (sha256, the current secret)');
      expect(asViewer.body).not.toContain('Request body');
      expect(asViewer.body).not.toContain('Resend');
      expect(asDeveloper.body).toContain('Request body');
      expect(asDeveloper.body).toContain('webhook_endpoint.test');
      expect(asDeveloper.body).toContain('Resend');
      for (const body of [asViewer.body, asDeveloper.body]) {
        expect(body).toContain('sha256=[redacted]');
        expect(body).not.toContain(signature.slice('sha256='.length));
      }
    } finally {
      await receiver.close();
    }
  });

  test("bad input on the endpoint page shows the API's message and changes nothing", async () => {
    const team = await merchantWithTeam();
    const developer = await signedInClient(app, team.developer.email);
    const base = `/dashboard/webhooks/${team.endpoint.id}`;
    const deliveries = async () => (await db.store.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1', [team.endpoint.id])).rowCount;
    const backwards = await developer.post(`${base}/replay`, { from: '2026-01-02T00:00', to: '2026-01-01T00:00' });
    expect(backwards.status).toBe(400);
    expect(backwards.body).toContain('from must be earlier than to');
    const before = await secretState(team.endpoint.id);
    const badOverlap = await developer.post(`${base}/rotate`, { expiresIn: '90000' });
    expect(badOverlap.status).toBe(400);
    expect(badOverlap.body).toContain('expiresIn must be a whole number of seconds from 0 to 86400');
    expect(await secretState(team.endpoint.id)).toBe(before);
    expect((await developer.post(`${base}/status`, { status: 'disabled' })).status).toBe(303);
    const whileDisabled = await developer.post(`${base}/test`);
    expect(whileDisabled.status).toBe(409);
    expect(whileDisabled.body).toContain('the endpoint is disabled');
    const replayDisabled = await developer.post(`${base}/replay`, { from: '2026-01-01T00:00' });
    expect(replayDisabled.status).toBe(409);
    expect(await deliveries()).toBe(0);
    const noKinds = await developer.post(`${base}/edit`, { url: team.endpoint.url, description: 'x' });
    expect(noKinds.status).toBe(400);
    expect(noKinds.body).toContain('choose at least one event kind');
    expect((await getEndpoint(db.store, { merchantId: team.merchantId, livemode: false }, team.endpoint.id))?.description).toBeNull();
  });
});
