import { describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { useApi } from '../helpers/api.ts';
import { newMerchantWithOwner, signedInClient } from '../helpers/dashboard.ts';
import { createApiKey, listAudit, type AuditEntry } from '../../src/accounts/index.ts';

/**
 * Issue 24: every sensitive change made through the API lands in the audit log the dashboard
 * shows and exports, naming the API key (id and hint), the mode, the IP and the time, committed
 * with the change; a refused request (4xx) leaves no entry.
 */
const db = useTestDatabase('api_audit_trail');
const api = useApi(db, { env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
const { call } = api;

const IP = '203.0.113.7';

async function merchantWithKeys() {
  const { merchantId, owner } = await newMerchantWithOwner(db.store);
  const live = await createApiKey(db.store, { merchantId, livemode: true });
  const test = await createApiKey(db.store, { merchantId, livemode: false });
  const readOnly = await createApiKey(db.store, { merchantId, livemode: true, scopes: ['read'] });
  return { merchantId, owner, live, test, readOnly };
}

/** The merchant's entries made with API keys, oldest first, as the fields a reader cares about. */
async function apiEntries(merchantId: string) {
  const entries = (await listAudit(db.store, merchantId)).filter((entry) => entry.apiKeyId !== null).reverse();
  return entries.map((entry: AuditEntry) => ({
    action: entry.action,
    target: entry.target,
    livemode: entry.livemode,
    actor: entry.actor,
    apiKeyId: entry.apiKeyId,
    userId: entry.userId,
    ip: entry.ip,
  }));
}

async function addWallet(key: string, extra: Record<string, unknown> = {}) {
  const account = privateKeyToAccount(generatePrivateKey());
  const challenge = await call('POST', '/api/v1/wallets/challenges', { key, body: { chain: 'polygon', address: account.address }, remoteAddress: IP });
  const signature = await account.signMessage({ message: challenge.body.message });
  const added = await call('POST', '/api/v1/wallets', { key, body: { challengeId: challenge.body.id, signature, ...extra }, remoteAddress: IP });
  expect(added.status).toBe(201);
  return added.body as { id: string; address: string };
}

describe('the API door', () => {
  test('wallet, webhook, secret and payment-link changes each leave an entry naming the key, its hint, the mode and the IP', async () => {
    const m = await merchantWithKeys();
    const live = { key: m.live.secret, remoteAddress: IP };
    const test = { key: m.test.secret, remoteAddress: IP };

    const first = await addWallet(m.live.secret, { default: true });
    const second = await addWallet(m.live.secret);
    expect((await call('POST', `/api/v1/wallets/${second.id}/default`, live)).status).toBe(200);
    expect((await call('DELETE', `/api/v1/wallets/${first.id}`, live)).status).toBe(200);

    const endpoint = await call('POST', '/api/v1/webhooks', { ...live, body: { url: 'http://127.0.0.1:9/live' } });
    expect(endpoint.status).toBe(201);
    const we = endpoint.body.id as string;
    expect((await call('PATCH', `/api/v1/webhooks/${we}`, { ...live, body: { url: 'http://127.0.0.1:9/moved' } })).status).toBe(200);
    expect((await call('PATCH', `/api/v1/webhooks/${we}`, { ...live, body: { status: 'disabled' } })).status).toBe(200);
    expect((await call('POST', `/api/v1/webhooks/${we}/rotate-secret`, { ...live, body: { expiresIn: 0 } })).status).toBe(200);
    expect((await call('POST', '/api/v1/webhook-secret/rotate', { ...live, body: { expiresIn: 60 } })).status).toBe(200);
    expect((await call('DELETE', `/api/v1/webhooks/${we}`, live)).status).toBe(200);

    const link = await call('POST', '/api/v1/payment-links', { ...test, body: { amount: '5', currency: 'USDC', chain: 'polygon' } });
    expect(link.status).toBe(201);
    expect((await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { ...test, body: { active: false } })).status).toBe(200);
    const sandboxEndpoint = await call('POST', '/api/v1/webhooks', { ...test, body: { url: 'http://127.0.0.1:9/test' } });
    expect((await call('POST', `/api/v1/webhooks/${sandboxEndpoint.body.id}/replay`, { ...test, body: { from: '2020-01-01T00:00:00Z' } })).status).toBe(202);

    const byLive = { actor: `API key ${m.live.apiKey.id} (${m.live.apiKey.hint})`, apiKeyId: m.live.apiKey.id, userId: null, ip: IP };
    const byTest = { actor: `API key ${m.test.apiKey.id} (${m.test.apiKey.hint})`, apiKeyId: m.test.apiKey.id, userId: null, ip: IP };
    expect(m.live.apiKey.hint).toMatch(/^svc_live_…[0-9A-Za-z]{4}$/);
    expect(await apiEntries(m.merchantId)).toEqual([
      { action: 'wallet.added', target: first.id, livemode: null, ...byLive },
      { action: 'wallet.default_set', target: first.id, livemode: null, ...byLive },
      { action: 'wallet.added', target: second.id, livemode: null, ...byLive },
      { action: 'wallet.default_set', target: second.id, livemode: null, ...byLive },
      { action: 'wallet.removed', target: first.id, livemode: null, ...byLive },
      { action: 'webhook.endpoint_created', target: we, livemode: true, ...byLive },
      { action: 'webhook.endpoint_updated', target: we, livemode: true, ...byLive },
      { action: 'webhook.endpoint_disabled', target: we, livemode: true, ...byLive },
      { action: 'webhook.secret_rotated', target: we, livemode: true, ...byLive },
      { action: 'webhook.secret_rotated', target: 'session secret (live)', livemode: true, ...byLive },
      { action: 'webhook.endpoint_disabled', target: we, livemode: true, ...byLive },
      { action: 'payment_link.created', target: link.body.id, livemode: false, ...byTest },
      { action: 'payment_link.deactivated', target: link.body.id, livemode: false, ...byTest },
      { action: 'webhook.endpoint_created', target: sandboxEndpoint.body.id, livemode: false, ...byTest },
      { action: 'webhook.redelivered', target: sandboxEndpoint.body.id, livemode: false, ...byTest },
    ]);
    // What changed is in the details; never a secret.
    const entries = await listAudit(db.store, m.merchantId);
    const moved = entries.find((entry) => entry.action === 'webhook.endpoint_updated')!;
    expect(moved.details).toEqual({ url: 'http://127.0.0.1:9/moved', previousUrl: 'http://127.0.0.1:9/live' });
    expect(entries.find((entry) => entry.action === 'wallet.removed')!.details).toMatchObject({ chain: 'polygon', address: first.address, wasDefault: false });
    expect(JSON.stringify(entries)).not.toMatch(/whsec_|svc_(live|test)_[0-9A-Za-z]{8}/);
  });

  test('a refused request (4xx) leaves no entry, and an idempotent replay adds none', async () => {
    const m = await merchantWithKeys();
    const wallet = await addWallet(m.live.secret);
    const before = (await listAudit(db.store, m.merchantId)).length;
    const refusals = [
      await call('POST', `/api/v1/wallets/${wallet.id}/default`, { key: m.test.secret }), // 403: a test key
      await call('DELETE', `/api/v1/wallets/${wallet.id}`, { key: m.readOnly.secret }), // 403: read-only
      await call('POST', '/api/v1/wallets/wal_unknown/default', { key: m.live.secret }), // 404
      await call('POST', '/api/v1/webhooks', { key: m.live.secret, body: { url: 'ftp://example.test/x' } }), // 400
      await call('DELETE', '/api/v1/webhooks/we_unknown', { key: m.live.secret }), // 404
      await call('POST', '/api/v1/webhooks/we_unknown/rotate-secret', { key: m.live.secret, body: {} }), // 404
      await call('POST', '/api/v1/webhook-secret/rotate', { key: m.live.secret, body: { expiresIn: 999_999 } }), // 400
      await call('PATCH', '/api/v1/payment-links/plink_unknown', { key: m.live.secret, body: { active: false } }), // 404
    ];
    expect(refusals.map((answer) => answer.status)).toEqual([403, 403, 404, 400, 404, 404, 400, 404]);
    // 409 after the change began (an inline wallet cannot be the default): the transaction rolls back, entry and all.
    await call('POST', '/api/v1/payments', {
      key: m.live.secret,
      body: { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: privateKeyToAccount(generatePrivateKey()).address },
    });
    const { rows } = await db.store.query<{ id: string }>('SELECT id FROM wallets WHERE merchant_id = $1 AND verified_at IS NULL', [m.merchantId]);
    expect((await call('POST', `/api/v1/wallets/${rows[0]!.id}/default`, { key: m.live.secret })).status).toBe(409);
    expect((await listAudit(db.store, m.merchantId)).length).toBe(before);

    const again = { key: m.live.secret, headers: { 'Idempotency-Key': 'choose-default-once' } };
    expect((await call('POST', `/api/v1/wallets/${wallet.id}/default`, again)).status).toBe(200);
    expect((await call('POST', `/api/v1/wallets/${wallet.id}/default`, again)).status).toBe(200);
    expect((await listAudit(db.store, m.merchantId)).length).toBe(before + 1);
  });

  test('the dashboard’s audit page and CSV export show the API’s entries, and filter by key', async () => {
    const m = await merchantWithKeys();
    const wallet = await addWallet(m.live.secret);
    await call('POST', '/api/v1/webhooks', { key: m.test.secret, body: { url: 'http://127.0.0.1:9/hook' }, remoteAddress: IP });
    const client = await signedInClient(api.app, m.owner.email);
    const page = await client.get('/dashboard/audit');
    expect(page.status).toBe(200);
    expect(page.body).toContain(`API key ${m.live.apiKey.id} (${m.live.apiKey.hint})`);
    expect(page.body).toContain('<code>wallet.added</code>');
    expect(page.body).toContain(`<code>${wallet.id}</code>`);
    expect(page.body).toContain(`<option value="${m.live.apiKey.id}">API key ${m.live.apiKey.hint}</option>`);

    const csv = (await client.get('/dashboard/audit.csv')).body.trim().split('\r\n');
    expect(csv[0]).toBe('at,actor,user_id,action,target,mode,ip,details');
    const line = csv.find((row) => row.includes('webhook.endpoint_created'))!;
    expect(line.split(',').slice(1, 7)).toEqual([
      `API key ${m.test.apiKey.id} (${m.test.apiKey.hint})`,
      '',
      'webhook.endpoint_created',
      line.split(',')[4],
      'test',
      IP,
    ]);
    expect(csv.some((row) => row.includes(`API key ${m.live.apiKey.id}`) && row.includes('wallet.added'))).toBe(true);

    const byKey = await client.get(`/dashboard/audit?user=${m.live.apiKey.id}`);
    expect(byKey.body).toContain('<code>wallet.added</code>');
    expect(byKey.body).not.toContain('<code>webhook.endpoint_created</code>');
    expect(byKey.body).not.toContain('<code>user.signed_in</code>');
  });
});
