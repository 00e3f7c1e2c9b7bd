import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';

/**
 * A COMMIT slower than the HTTP layer's statement limit (a deferred trigger standing in for an
 * fsync stall or a slow synchronous replica). The client gives up waiting, but the server goes on
 * and commits: a 503 (retry later) would then be a lie, and a retry would make a second payment.
 * The store asks the transaction's fate on another connection: committed gives the real answer;
 * not known in time gives a 500 that says the change may have been applied. Never a 503.
 */
const db = useTestDatabase('api_commit_timeout');
let app: FastifyInstance;
let key: string;
const create = () =>
  app.inject({ method: 'POST', url: '/api/v1/payments', headers: { 'x-api-key': key }, payload: { amount: '1', currency: 'USDC', chain: 'polygon' } });
const sessions = async () => (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions')).rows[0]!.n;

beforeAll(async () => {
  app = buildApi(db.store, { env: { SVC_API_DB_TIMEOUT_MS: '600' } });
  await app.ready();
  key = (await newMerchant(db.store)).test;
});
afterAll(async () => {
  await app?.close();
});

async function slowCommits(seconds: number) {
  await db.store.query(
    `CREATE OR REPLACE FUNCTION slow_commit_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(${seconds}); RETURN NULL; END $$`,
  );
  await db.store.query('DROP TRIGGER IF EXISTS slow_commit_t ON payment_sessions');
  await db.store.query(
    `CREATE CONSTRAINT TRIGGER slow_commit_t AFTER INSERT ON payment_sessions DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit_fn()`,
  );
}

describe('a COMMIT that outlasts the statement limit', () => {
  test('it commits soon after the limit: the store learns so, and the request gets its 201', async () => {
    await slowCommits(0.9);
    const before = await sessions();
    const answer = await create();
    expect(answer.statusCode, answer.body).toBe(201);
    expect(await sessions()).toBe(before + 1);
  });

  test('its fate is not known in time: a 500 that says the change may have been applied, not a 503 to retry', async () => {
    await slowCommits(3);
    const before = await sessions();
    const answer = await create();
    expect(answer.statusCode).toBe(500);
    expect(answer.headers['retry-after']).toBeUndefined();
    expect(answer.json().error).toMatch(/^the database did not confirm this change in time: it may have been applied\. Retry with the same Idempotency-Key/);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await sessions()).toBe(before + 1); // it was applied: exactly why no 503 was sent
    await db.store.query('DROP TRIGGER slow_commit_t ON payment_sessions');
  });
});
