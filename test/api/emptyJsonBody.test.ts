import { afterAll, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';

// Many clients send Content-Type: application/json on every request; an empty body with it is no body.
const db = useTestDatabase('empty_json_body');
let app: FastifyInstance;
let key: string;

beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
  key = (await newMerchant(db.store)).test;
});
afterAll(async () => {
  await app?.close();
});

const send = (method: 'POST' | 'DELETE', url: string, payload = '') =>
  app.inject({ method, url, payload, headers: { 'x-api-key': key, 'content-type': 'application/json' } });

test.each(['/api/v1', '/v1'])('body-less actions under %s accept Content-Type: application/json with an empty body', async (prefix) => {
  const created = await app.inject({ method: 'POST', url: `${prefix}/webhooks`, headers: { 'x-api-key': key }, payload: { url: 'http://127.0.0.1:9/in' } });
  expect(created.statusCode).toBe(201);
  const id = created.json().id as string;

  const rotated = await send('POST', `${prefix}/webhooks/${id}/rotate-secret`);
  expect(rotated.statusCode, rotated.body).toBe(200);
  expect(rotated.json().secret).toMatch(/^whsec_/);
  // Whitespace only is empty too.
  expect((await send('POST', `${prefix}/webhooks/${id}/rotate-secret`, ' \r\n')).statusCode).toBe(200);
  // Unknown ids reach the handler (404), so the body was accepted.
  expect((await send('POST', `${prefix}/events/evt_nope/redeliver`)).statusCode).toBe(404);
  expect((await send('POST', `${prefix}/refunds/rf_nope/reject`)).statusCode).toBe(404);
  expect(await send('DELETE', `${prefix}/webhooks/${id}`).then((answer) => [answer.statusCode, answer.json()])).toEqual([200, { id, deleted: true }]);
});

test.each(['/api/v1', '/v1'])(
  'under %s a route that needs a body still says so, and a non-empty body that is not JSON is still a clear 400',
  async (prefix) => {
    const empty = await send('POST', `${prefix}/payments`);
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual({ error: 'the request body must be a JSON object' });
    const broken = await send('POST', `${prefix}/payments`, '{"amount":');
    expect(broken.statusCode).toBe(400);
    expect(broken.json().error).toMatch(/JSON/);
    const notJson = await send('DELETE', `${prefix}/webhooks/we_nope`, 'nope');
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error).toMatch(/JSON/);
    const poisoned = await send('POST', `${prefix}/payments`, '{"__proto__":{"x":1}}');
    expect(poisoned.statusCode).toBe(400);
    // Valid JSON refused for a key: the message names the key rather than calling the JSON invalid.
    expect(poisoned.json()).toEqual({ error: 'the request body may not use the keys "__proto__" or "constructor.prototype"' });
    const nested = await send('POST', `${prefix}/payments`, '{"amount":"1","metadata":{"constructor":{"prototype":{"x":1}}}}');
    expect(nested.json()).toEqual({ error: 'the request body may not use the keys "__proto__" or "constructor.prototype"' });
  },
);
