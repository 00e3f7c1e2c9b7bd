import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';

const db = useTestDatabase('api_unknown_ids');
const api = useApi(db);

/**
 * Every route that reads or acts on one resource by id: `{id}` is replaced. Bodies are valid, so
 * only the id can be what is wrong.
 */
const ROUTES: { method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; path: string; prefix: string; body?: unknown; key?: false }[] = [
  { method: 'GET', path: '/api/v1/sessions/{id}', prefix: 'ses' },
  { method: 'GET', path: '/v1/sessions/{id}', prefix: 'ses' },
  { method: 'GET', path: '/api/v1/payments/{id}', prefix: 'ses' },
  { method: 'GET', path: '/api/v1/checkout/sessions/{id}', prefix: 'ses' },
  { method: 'GET', path: '/api/v1/payment-links/{id}', prefix: 'plink' },
  { method: 'PATCH', path: '/api/v1/payment-links/{id}', prefix: 'plink', body: { active: false } },
  { method: 'GET', path: '/api/v1/refunds/{id}', prefix: 'rfd' },
  { method: 'POST', path: '/api/v1/refunds/{id}/complete', prefix: 'rfd', body: { txHash: `0x${'ab'.repeat(32)}` } },
  { method: 'POST', path: '/api/v1/refunds/{id}/reject', prefix: 'rfd', body: { reason: 'no' } },
  { method: 'GET', path: '/api/v1/events/{id}', prefix: 'evt' },
  { method: 'GET', path: '/api/v1/events/{id}/deliveries', prefix: 'evt' },
  { method: 'GET', path: '/api/v1/events/{id}/attempts', prefix: 'evt' },
  { method: 'POST', path: '/api/v1/events/{id}/redeliver', prefix: 'evt', body: {} },
  { method: 'GET', path: '/api/v1/webhooks/{id}', prefix: 'we' },
  { method: 'PATCH', path: '/api/v1/webhooks/{id}', prefix: 'we', body: { description: 'x' } },
  { method: 'DELETE', path: '/api/v1/webhooks/{id}', prefix: 'we' },
  { method: 'POST', path: '/api/v1/webhooks/{id}/rotate-secret', prefix: 'we', body: {} },
  { method: 'GET', path: '/api/v1/webhooks/{id}/deliveries', prefix: 'we' },
  { method: 'POST', path: '/api/v1/webhooks/{id}/replay', prefix: 'we', body: { from: '2026-01-01T00:00:00Z' } },
  { method: 'POST', path: '/api/v1/transfers/{id}/attribution', prefix: 'trf', body: { sessionId: 'ses_unknown0' } },
  { method: 'GET', path: '/checkout/{id}', prefix: 'ses', key: false },
  { method: 'GET', path: '/checkout/{id}/status', prefix: 'ses', key: false },
  { method: 'GET', path: '/checkout/{id}/events', prefix: 'ses', key: false },
  { method: 'GET', path: '/checkout/{id}/qr.svg', prefix: 'ses', key: false },
  { method: 'POST', path: '/checkout/{id}/refund', prefix: 'ses', key: false, body: { destination: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' } },
  { method: 'GET', path: '/pay/{id}', prefix: 'plink', key: false },
];

/** Ids that name nothing: well shaped, and of every wrong shape (punctuation, space, too long, NUL, non-ASCII). */
const IDS = (prefix: string) => [`${prefix}_unknown0`, '123', 'not-an-id', 'a%20b', 'ses_x.y', 'x'.repeat(65), 'ab%00c', '%C3%A9t%C3%A9'];

describe('an id that names nothing is a 404 {"error"} on every route that takes one, whatever its shape (spec §7)', () => {
  test.each(ROUTES)('$method $path', async ({ method, path, prefix, body, key }) => {
    const m = await newMerchant(db.store);
    for (const id of IDS(prefix)) {
      const answer = await api.call(method, path.replace('{id}', id), {
        ...(key === false ? {} : { key: m.test }),
        ...(body === undefined ? {} : { body }),
        headers: { accept: 'application/json' },
      });
      expect([id, answer.status, answer.body]).toEqual([id, 404, { error: expect.any(String) }]);
    }
  });

  test('the message names what was looked for; a browser visiting a link or a checkout gets the not-found page', async () => {
    const m = await newMerchant(db.store);
    expect((await api.call('GET', '/api/v1/sessions/not-an-id', { key: m.test })).body).toEqual({ error: 'payment session "not-an-id" not found' });
    expect((await api.call('GET', '/api/v1/payment-links/plink_x.y', { key: m.test })).body).toEqual({ error: 'payment link "plink_x.y" not found' });
    expect((await api.call('GET', `/api/v1/events/${'e'.repeat(70)}`, { key: m.test })).body).toEqual({ error: `event "${'e'.repeat(64)}…" not found` });
    // The sandbox's payment simulator too (a well-shaped unknown id needs a running sandbox: see the sandbox tests).
    expect((await api.call('POST', '/api/v1/sandbox/sessions/not-an-id/pay', { key: m.test, body: {} })).body).toEqual({
      error: 'payment session "not-an-id" not found',
    });
    // Unchanged: a bad query or body is still a 400, and an unauthenticated request a 401.
    expect((await api.call('GET', '/api/v1/payments?limit=0', { key: m.test })).status).toBe(400);
    expect((await api.call('GET', '/api/v1/sessions/not-an-id')).status).toBe(401);
    const browser = { accept: 'text/html' };
    for (const url of ['/pay/plink_abc).', '/checkout/ses_abc).', `/checkout/${'x'.repeat(80)}`]) {
      const page = await api.app.inject({ method: 'GET', url, headers: browser });
      expect([url, page.statusCode, page.headers['content-type']]).toEqual([url, 404, 'text/html; charset=utf-8']);
    }
  });
});
