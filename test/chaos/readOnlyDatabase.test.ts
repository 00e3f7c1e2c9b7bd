import { afterAll, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createStore, type Store } from '../../src/store/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant, WALLET } from '../helpers/api.ts';

// A read-only database (a hot standby after a failover went the wrong way, or an operator's
// `default_transaction_read_only`): every write fails with SQLSTATE 25006.
const db = useTestDatabase('read_only_database');
let store: Store;
let app: FastifyInstance;
let key: string;

beforeAll(async () => {
  key = (await newMerchant(db.store)).test;
  await db.store.query(`ALTER DATABASE "${db.name}" SET default_transaction_read_only = on`);
  store = createStore({ connectionString: db.connectionString, max: 4 });
  app = buildApi(store);
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await store?.close();
  await db.store.query(`ALTER DATABASE "${db.name}" RESET default_transaction_read_only`);
});

test('a read-only database answers writes (and reads, whose rate limits write) 503 with Retry-After, never 500', async () => {
  for (const request of [
    { method: 'POST', url: '/api/v1/payments', payload: { amount: '1', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET } },
    { method: 'GET', url: '/api/v1/payments?limit=1' },
    { method: 'POST', url: '/v1/sessions', payload: { amount: '1', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET } },
  ] as const) {
    const answer = await app.inject({ ...request, headers: { authorization: `Bearer ${key}` } } as never);
    expect(answer.statusCode, `${request.method} ${request.url}: ${answer.body}`).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.json()).toEqual({ error: expect.stringMatching(/temporarily unavailable/) });
  }
});
