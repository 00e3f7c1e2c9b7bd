import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { createStore, type Store } from '../../src/store/index.ts';
import { dueLockKeys } from '../../src/payments/dueAmounts.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { idempotencyKeyLockText } from '../../src/store/lockKeys.ts';
import { buildApi, createClient, newMerchant, WALLET } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';

const db = useTestDatabase('api_idempotency');
// Two API processes' worth of state: two fastify apps, each with its own pool, on one database.
let storeB: Store;
let appA: ReturnType<typeof buildApi>;
let appB: ReturnType<typeof buildApi>;
let urlA: string;
let urlB: string;
let call: ReturnType<typeof createClient>;

beforeAll(async () => {
  storeB = createStore({ connectionString: db.connectionString, max: 5 });
  appA = buildApi(db.store);
  appB = buildApi(storeB);
  urlA = await appA.listen({ port: 0, host: '127.0.0.1' });
  urlB = await appB.listen({ port: 0, host: '127.0.0.1' });
  call = createClient(appA, await createOpenApiChecker(appA));
});
afterAll(async () => {
  await appA.close();
  await appB.close();
  await storeB.close();
});

const payment = (amount = '12') => ({ amount, currency: 'USDT', chain: 'arbitrum', merchantWallet: WALLET });

async function post(base: string, path: string, key: string, idempotencyKey: string | undefined, body: unknown) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as any,
    replayed: response.headers.get('idempotent-replayed'),
    retryAfter: response.headers.get('retry-after'),
  };
}

async function sessionsOf(merchantId: string): Promise<number> {
  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId]);
  return rows[0]!.n;
}

describe('Idempotency-Key', () => {
  test('the same key and body replays the first response (status, body) with Idempotent-Replayed: true, across processes and prefixes', async () => {
    const m = await newMerchant(db.store);
    const first = await post(urlA, '/api/v1/payments', m.test, 'order-1', payment());
    expect(first.status).toBe(201);
    expect(first.replayed).toBe('false');
    // Key order in the body does not matter; the other process and the /v1 prefix replay too.
    const again = await post(urlB, '/v1/payments', m.test, 'order-1', { merchantWallet: WALLET, chain: 'arbitrum', currency: 'USDT', amount: '12' });
    expect(again).toEqual({ status: 201, body: first.body, replayed: 'true', retryAfter: null });
    expect(await sessionsOf(m.id)).toBe(1);
  });

  test('every creation route claims the key in its own transaction and replays: /sessions, /payments, /checkout/sessions', async () => {
    const m = await newMerchant(db.store);
    for (const [index, path] of ['/api/v1/sessions', '/api/v1/payments', '/api/v1/checkout/sessions'].entries()) {
      const key = `route-${index}`;
      const first = await post(urlA, path, m.test, key, payment('15'));
      expect(first.status).toBe(201);
      expect(await post(urlB, path, m.test, key, payment('15'))).toEqual({ status: 201, body: first.body, replayed: 'true', retryAfter: null });
      // The stored answer was written by the session's own transaction.
      const { rows } = await db.store.query<{ claim_xmin: string; session_xmin: string }>(
        `SELECT k.xmin::text AS claim_xmin, s.xmin::text AS session_xmin FROM idempotency_keys k, payment_sessions s
          WHERE k.merchant_id = $1 AND k.idempotency_key = $2 AND s.id = $3`,
        [m.id, key, first.body.id],
      );
      expect(rows[0]!.claim_xmin).toBe(rows[0]!.session_xmin);
    }
    expect(await sessionsOf(m.id)).toBe(3);
  });

  test('the same key with a different body is a 422; a different path is a 422 too', async () => {
    const m = await newMerchant(db.store);
    expect((await post(urlA, '/api/v1/payments', m.test, 'k', payment('12'))).status).toBe(201);
    const changed = await post(urlB, '/api/v1/payments', m.test, 'k', payment('13'));
    expect(changed).toMatchObject({
      status: 422,
      body: { error: 'this Idempotency-Key was already used with a different request (method, path or body); use a new key' },
    });
    expect((await post(urlA, '/api/v1/sessions', m.test, 'k', payment('12'))).status).toBe(422);
    expect(await sessionsOf(m.id)).toBe(1);
  });

  test('the answer is stored in the same transaction as the change it reports (sessions, refunds, wallets)', async () => {
    const m = await newMerchant(db.store);
    const first = await post(urlA, '/api/v1/sessions', m.test, 'atomic', payment('14'));
    const { rows } = await db.store.query<{ state: string; response_status: number; response_body: string; xmin: string; session_xmin: string }>(
      `SELECT k.state, k.response_status, k.response_body, k.xmin::text, s.xmin::text AS session_xmin
       FROM idempotency_keys k, payment_sessions s WHERE k.idempotency_key = 'atomic' AND s.id = $1`,
      [first.body.id],
    );
    expect(rows[0]).toMatchObject({ state: 'done', response_status: 201 });
    expect(JSON.parse(rows[0]!.response_body)).toEqual(first.body);
    // One transaction wrote both rows.
    expect(rows[0]!.xmin).toBe(rows[0]!.session_xmin);
  });

  // Scope (account and mode, not API key): idempotencyScope.test.ts.

  test('a request that fails validation stores nothing: the key is free for the corrected request', async () => {
    const m = await newMerchant(db.store);
    const bad = await post(urlA, '/api/v1/payments', m.test, 'fix-me', { ...payment(), amount: '1.1234567' });
    expect(bad.status).toBe(400);
    const schemaBad = await post(urlA, '/api/v1/payments', m.test, 'fix-me', { ...payment(), extra: 1 });
    expect(schemaBad.status).toBe(400);
    const { rows } = await db.store.query('SELECT * FROM idempotency_keys WHERE idempotency_key = $1', ['fix-me']);
    expect(rows).toEqual([]);
    expect((await post(urlA, '/api/v1/payments', m.test, 'fix-me', payment())).status).toBe(201);
  });

  test('an Idempotency-Key over 255 characters is a 400', async () => {
    const m = await newMerchant(db.store);
    const answer = await call('POST', '/api/v1/payments', { key: m.test, body: payment(), headers: { 'idempotency-key': 'x'.repeat(256) } });
    expect(answer).toMatchObject({ status: 400, body: { error: 'header parameter idempotency-key must be 1 to 255 characters' } });
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: payment(), headers: { 'idempotency-key': 'x'.repeat(255) } })).status).toBe(201);
  });

  test('while the first request still runs, a retry gets 409', async () => {
    const m = await newMerchant(db.store);
    const { rows } = await db.store.query<{ id: string }>('SELECT id FROM api_keys WHERE merchant_id = $1 AND livemode = false ORDER BY created_at LIMIT 1', [
      m.id,
    ]);
    // Hold the due-amount lock of this (chain, currency, wallet) so the first request blocks inside its transaction
    // (a sandbox session pays to the merchant's sandbox address).
    const blocker = await db.store.pool.connect();
    await blocker.query('BEGIN');
    // 12 USDT at 6 decimals is bucket 1200 of one-cent buckets.
    const [lockKey] = dueLockKeys({ chain: 'arbitrum', currency: 'USDT', payTo: sandboxWallet('arbitrum', m.id), bucket: 1200n });
    await blocker.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [lockKey]);
    const first = post(urlA, '/api/v1/payments', m.test, 'slow', payment());
    // Wait until the first request waits for that lock: it has claimed the key in its transaction.
    await waitFor(
      async () => (await db.store.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rowCount === 1,
      'the first request waiting for the due-amount lock',
      5_000,
    );
    // The claim is not committed yet: nothing shows outside its transaction.
    expect((await db.store.query(`SELECT 1 FROM idempotency_keys WHERE idempotency_key = 'slow'`)).rowCount).toBe(0);
    const retry = await post(urlB, '/api/v1/payments', m.test, 'slow', payment());
    expect(retry).toMatchObject({
      status: 409,
      retryAfter: '1',
      body: { error: 'a request with this Idempotency-Key is still being processed; retry shortly' },
    });
    await blocker.query('COMMIT');
    blocker.release();
    const done = await first;
    expect(done.status).toBe(201);
    expect((await post(urlB, '/api/v1/payments', m.test, 'slow', payment())).body).toEqual(done.body);
    expect(rows.length).toBe(1);
  });

  test('the occasional cleanup of expired keys cannot fail a creation: a deadlock there is not swallowed inside its transaction', async () => {
    const m = await newMerchant(db.store);
    expect((await post(urlA, '/api/v1/payments', m.test, 'expired', payment('13'))).status).toBe(201);
    await db.store.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 hour' WHERE merchant_id = $1 AND idempotency_key = 'expired'`, [m.id]);
    // Another transaction holds the expired row (as a concurrent claim taking it over would)...
    const holder = await db.store.pool.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM idempotency_keys WHERE merchant_id = $1 AND idempotency_key = 'expired' FOR UPDATE`, [m.id]);
    // ...while this request draws the 1-in-100 cleanup, which waits for that row.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const creation = post(urlA, '/api/v1/payments', m.test, 'draws-cleanup', payment('14'));
      for (let i = 0; i < 200; i++) {
        const waiting = await db.store.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM idempotency_keys%'`);
        if (waiting.rowCount) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The holder then wants what the request holds if its cleanup runs inside the creation's
      // transaction (the key's lock): a deadlock, whose victim must not be the creation.
      const lockText = idempotencyKeyLockText({ merchantId: m.id, livemode: false, key: 'draws-cleanup' });
      await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lockText]).catch(() => {});
      await holder.query('COMMIT');
      const answer = await creation;
      expect(answer.status).toBe(201);
      expect(await post(urlB, '/api/v1/payments', m.test, 'draws-cleanup', payment('14'))).toMatchObject({ status: 201, body: answer.body, replayed: 'true' });
    } finally {
      random.mockRestore();
      holder.release();
    }
  });

  test('a creation whose transaction is retried answers as its last attempt did: a duplicate holding the key by then is a plain 409', async () => {
    const m = await newMerchant(db.store);
    const blocker = await db.store.pool.connect();
    try {
      await blocker.query('BEGIN');
      // The first attempt claims the key, then waits for a due-amount lock the blocker holds...
      const [dueLock] = dueLockKeys({ chain: 'arbitrum', currency: 'USDT', payTo: sandboxWallet('arbitrum', m.id), bucket: 1600n });
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [dueLock]);
      const first = post(urlA, '/api/v1/payments', m.test, 'retried', payment('16'));
      for (let i = 0; i < 200; i++) {
        if ((await db.store.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rowCount) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // ...while the blocker, standing for a duplicate, wants the key: a deadlock that the first
      // attempt loses; its retry finds the key held and answers 409, as any request would.
      const lockText = idempotencyKeyLockText({ merchantId: m.id, livemode: false, key: 'retried' });
      await blocker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lockText]);
      const answer = await first;
      expect(answer).toMatchObject({ status: 409, retryAfter: '1', replayed: null });
    } finally {
      await blocker.query('COMMIT');
      blocker.release();
    }
    expect((await post(urlA, '/api/v1/payments', m.test, 'retried', payment('16'))).status).toBe(201);
  });

  test('concurrent identical requests on two processes create exactly one session; the others get 409 or the replay', async () => {
    const m = await newMerchant(db.store);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => post(i % 2 ? urlA : urlB, '/api/v1/payments', m.test, 'race', payment())));
    const created = answers.filter((answer) => answer.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((answer) => answer.body.id)).size).toBe(1);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(await sessionsOf(m.id)).toBe(1);
  });

  test('a claim abandoned by a dead process can be taken over after it lapses', async () => {
    const m = await newMerchant(db.store);
    const { rows } = await db.store.query<{ id: string }>('SELECT id FROM api_keys WHERE merchant_id = $1 ORDER BY created_at LIMIT 1', [m.id]);
    const first = await post(urlA, '/api/v1/payments', m.test, 'orphan', payment());
    // Pretend the first request died mid-way: running, lock lapsed.
    await db.store.query(`UPDATE idempotency_keys SET state = 'running', locked_until = now() - interval '1 second' WHERE idempotency_key = 'orphan'`);
    const retry = await post(urlB, '/api/v1/payments', m.test, 'orphan', payment());
    expect(retry.status).toBe(201);
    expect(retry.body.id).not.toBe(first.body.id);
    expect(rows.length).toBe(1);
  });
});
