import { afterAll, beforeAll, expect, test } from 'vitest';
import { createStore } from '../../src/store/index.ts';
import { buildApi } from '../helpers/api.ts';

// Nothing listens on port 1: every query fails with ECONNREFUSED, as when the database is down.
const store = createStore({ connectionString: 'postgres://svc:svc@127.0.0.1:1/svc', max: 2 });
let app: ReturnType<typeof buildApi>;

beforeAll(async () => {
  app = buildApi(store);
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await store.close();
});

test('with the database down, /health answers 503 unhealthy and other routes 503 with Retry-After, never 500', async () => {
  const health = await app.inject({ method: 'GET', url: '/api/v1/health' });
  expect(health.statusCode).toBe(503);
  expect(health.json()).toMatchObject({ status: 'unhealthy', database: 'unavailable' });
  for (const [method, url] of [
    ['POST', '/api/v1/payments'],
    ['GET', '/v1/sessions/ses_x'],
    ['GET', '/pay/plink_x'],
  ] as const) {
    const answer = await app.inject({
      method,
      url,
      headers: { 'x-api-key': `svc_test_${'A'.repeat(32)}`, 'content-type': 'application/json' },
      payload: method === 'POST' ? '{}' : undefined,
    });
    expect(answer.statusCode, url).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.json()).toEqual({ error: 'the service is temporarily unavailable (database unreachable); retry later' });
  }
});
