import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createStore, DatabaseTimeoutError, type Store } from '../../src/store/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { startFreezableProxy, type FreezableProxy } from '../helpers/freezableProxy.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';

// A real Postgres behind a TCP proxy that can freeze every byte: a frozen database host or a
// network partition, where nothing is refused and nothing answers.
const db = useTestDatabase('frozen_database');
const API_TIMEOUT_MS = 1_500;
let proxy: FreezableProxy;
let store: Store;
let app: FastifyInstance;
let key: string;

beforeAll(async () => {
  proxy = await startFreezableProxy(db.connectionString);
  store = createStore({ connectionString: proxy.connectionString, max: 4 });
  app = buildApi(store, { env: { SVC_API_DB_TIMEOUT_MS: String(API_TIMEOUT_MS) } });
  await app.ready();
  key = (await newMerchant(db.store)).test;
});
afterEach(() => proxy.thaw());
afterAll(async () => {
  await app?.close();
  proxy?.thaw();
  await store?.close();
  await proxy?.close();
});

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
}

const UNAVAILABLE = { error: 'the service is temporarily unavailable (database unreachable); retry later' };

test('/health answers 503 unhealthy within 3 s while the database is frozen, and 200 once it answers again', async () => {
  expect((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
  proxy.freeze();
  // First with an idle pooled connection (the statement hangs), then with none (the connect hangs).
  for (const url of ['/api/v1/health', '/v1/health']) {
    const { result, ms } = await timed(() => app.inject({ method: 'GET', url }));
    expect(result.statusCode, url).toBe(503);
    expect(result.json()).toMatchObject({ status: 'unhealthy', database: 'unavailable' });
    expect(ms, url).toBeLessThan(3_000);
  }
  proxy.thaw();
  expect((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
});

test('with the database frozen, every route answers 503 with Retry-After: 5 within the bounded waits (more requests than pool connections); the pool recovers after', async () => {
  const headers = { 'x-api-key': key };
  const warm = await app.inject({ method: 'GET', url: '/api/v1/payments?limit=1', headers });
  expect(warm.statusCode, warm.body).toBe(200);
  proxy.freeze();
  const requests = [
    { method: 'GET', url: '/api/v1/payments?limit=1', headers },
    { method: 'GET', url: '/v1/sessions/ses_x', headers },
    {
      method: 'POST',
      url: '/api/v1/payments',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"amount":"1","currency":"USDC","chain":"polygon"}',
    },
    { method: 'DELETE', url: '/api/v1/webhooks/we_x', headers },
    { method: 'GET', url: '/api/v1/status', headers },
    { method: 'GET', url: '/pay/plink_x' },
  ] as const;
  const { result: answers, ms } = await timed(() => Promise.all([...requests, ...requests].map((request) => app.inject(request as never))));
  for (const [index, answer] of answers.entries()) {
    const { url } = [...requests, ...requests][index]!;
    expect(answer.statusCode, url).toBe(503);
    expect(answer.headers['retry-after'], url).toBe('5');
    expect(answer.json(), url).toEqual(UNAVAILABLE);
  }
  // Bounded, not hung: the per-IP limit's wait (1 s; /pay fails open past it) plus one connect
  // wait (3 s) is about 4 s; a hung request would wait for the test's timeout (60 s). The margin
  // absorbs a loaded CI machine (6.0 s was seen once with a Rust build running alongside).
  expect(ms).toBeLessThan(9_000);
  proxy.thaw();
  expect((await app.inject({ method: 'GET', url: '/api/v1/payments?limit=1', headers })).statusCode).toBe(200);
});

test('a bounded statement that times out discards its connection and rolls its transaction back; the unbounded store (workers) is not cut', async () => {
  const bounded = db.store.bounded({ connectMs: 1_000, queryMs: 500 });
  await expect(
    bounded.transaction(async (sql) => {
      await sql.query('CREATE TABLE frozen_half_written (x int)');
      await sql.query('SELECT pg_sleep(2)');
    }),
    // Inside a bounded transaction the server gives up just before the client (SET LOCAL
    // statement_timeout): a definite error, the transaction rolled back, the connection reusable.
  ).rejects.toMatchObject({ code: '57014' });
  await expect
    .poll(async () => (await db.store.query<{ t: string | null }>(`SELECT to_regclass('frozen_half_written')::text AS t`)).rows[0]!.t, { timeout: 5_000 })
    .toBeNull();
  await expect(bounded.query('SELECT pg_sleep(1)')).rejects.toBeInstanceOf(DatabaseTimeoutError);
  // Workers use the store itself: a 1 s statement is slow, not a fault.
  expect((await db.store.query<{ ok: number }>('SELECT 1 AS ok FROM pg_sleep(1)')).rows).toEqual([{ ok: 1 }]);
  expect((await bounded.query<{ ok: number }>('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
});
