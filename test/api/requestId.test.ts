import { afterAll, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';

// Every answer names its request (X-Request-Id, as Stripe's Request-Id): client libraries put it
// into their errors, and the request's log lines carry the same id.
const db = useTestDatabase('request_id');
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

test('successes, client errors and unknown routes all carry a fresh X-Request-Id; a client-sent one is not echoed', async () => {
  const answers = await Promise.all([
    app.inject({ method: 'GET', url: '/api/v1/health' }),
    app.inject({ method: 'GET', url: '/api/v1/payments', headers: { 'x-api-key': key } }),
    app.inject({ method: 'GET', url: '/api/v1/payments' }),
    app.inject({ method: 'GET', url: '/api/v1/sessions/ses_unknown', headers: { 'x-api-key': key } }),
    app.inject({ method: 'GET', url: '/api/v1/no-such-route', headers: { 'x-request-id': 'chosen-by-client' } }),
  ]);
  expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 401, 404, 404]);
  const ids = answers.map((answer) => answer.headers['x-request-id']);
  for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
  expect(new Set(ids).size).toBe(ids.length);
});
