import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createStore, statementText, type Store } from '../../src/store/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../src/accounts/index.ts';
import { createApiKeyCache, KEY_CACHE_TTL_MS } from '../../src/api/auth.ts';
import { buildApi, newMerchant } from '../helpers/api.ts';
import { waitFor } from '../helpers/waitFor.ts';

/**
 * Each API process keeps the keys it has read in memory (src/api/auth.ts). Two APIs on two pools
 * of one database stand for two daemon processes; changes are made with plain SQL on a third
 * connection, as another process (or an operator in psql) would make them, so nothing in this
 * process's memory is told directly.
 */
const db = useTestDatabase('api_key_cache');
let storeB: Store;
let appA: ReturnType<typeof buildApi>;
let appB: ReturnType<typeof buildApi>;

beforeAll(async () => {
  storeB = createStore({ connectionString: db.connectionString, max: 3 });
  appA = buildApi(db.store);
  appB = buildApi(storeB);
  await Promise.all([appA.ready(), appB.ready()]);
});
afterAll(async () => {
  await appA.close();
  await appB.close();
  await storeB.close();
});

const read = (app: ReturnType<typeof buildApi>, key: string) =>
  app.inject({ method: 'GET', url: '/api/v1/currencies', headers: { 'x-api-key': key } }).then((answer) => answer.statusCode);

/** Polls `app` with `key` until it answers 401; returns the milliseconds that took. */
async function untilRefused(app: ReturnType<typeof buildApi>, key: string, giveUpMs = 5_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < giveUpMs) {
    if ((await read(app, key)) === 401) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`still accepted after ${giveUpMs} ms`);
}

async function keyIdOf(merchantId: string, secret: string): Promise<string> {
  const keys = await listApiKeys(db.store, { merchantId });
  return keys.find((key) => key.hint.endsWith(secret.slice(-4)))!.id;
}

describe('API keys cached per process', () => {
  test('a key revoked elsewhere (plain SQL on another connection) is refused by both processes well within the documented delay', async () => {
    const m = await newMerchant(db.store);
    expect([await read(appA, m.test), await read(appB, m.test)]).toEqual([200, 200]);
    const id = await keyIdOf(m.id, m.test);
    const revokedAt = performance.now();
    await db.store.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    const [delayA, delayB] = await Promise.all([untilRefused(appA, m.test), untilRefused(appB, m.test)]);
    // The notification arrives in milliseconds; the documented bound is the cache's time to live.
    expect(Math.max(delayA, delayB)).toBeLessThan(KEY_CACHE_TTL_MS);
    expect(performance.now() - revokedAt).toBeLessThan(KEY_CACHE_TTL_MS + 500);
    expect((await appB.inject({ method: 'GET', url: '/api/v1/currencies', headers: { 'x-api-key': m.test } })).json()).toEqual({
      error: 'this API key has been revoked',
    });
  });

  test('with no notification at all (triggers off for that session), the time to live still bounds the delay', async () => {
    const m = await newMerchant(db.store);
    expect(await read(appB, m.test)).toBe(200);
    const id = await keyIdOf(m.id, m.test);
    const client = new pg.Client({ connectionString: db.connectionString });
    await client.connect();
    try {
      // `replica` skips ordinary triggers, so migration 016's notification is never sent.
      await client.query(`SET session_replication_role = replica`);
      await client.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    } finally {
      await client.end();
    }
    const delay = await untilRefused(appB, m.test);
    // Scheduling on a busy machine adds a little to the bound; a missing bound would take forever.
    expect(delay).toBeLessThan(KEY_CACHE_TTL_MS + 500);
  });

  test('a key created in one process works in another at once, even one that has cached other keys of the merchant', async () => {
    const m = await newMerchant(db.store);
    expect(await read(appB, m.test)).toBe(200);
    const { secret } = await createApiKey(db.store, { merchantId: m.id, livemode: false });
    expect(await read(appB, secret)).toBe(200);
    // Unknown keys are never cached: a key that does not exist yet is not remembered as unknown.
    const later = `svc_test_${'B'.repeat(32)}`;
    expect(await read(appA, later)).toBe(401);
    await db.store.query(`UPDATE api_keys SET secret_hash = encode(sha256($1::bytea), 'hex'), last4 = 'BBBB' WHERE id = $2`, [
      later,
      await keyIdOf(m.id, secret),
    ]);
    expect(await read(appA, later)).toBe(200);
  });

  test('scopes changed elsewhere apply within the delay too (a read-only key loses its writes)', async () => {
    const m = await newMerchant(db.store);
    const create = () =>
      appB.inject({
        method: 'POST',
        url: '/api/v1/payments',
        headers: { 'x-api-key': m.test },
        payload: { amount: '1', currency: 'USDC', chain: 'base', merchantWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' },
      });
    expect((await create()).statusCode).toBe(201);
    await db.store.query(`UPDATE api_keys SET scopes = ARRAY['read'] WHERE id = $1`, [await keyIdOf(m.id, m.test)]);
    const started = performance.now();
    let status = 201;
    while (status !== 403 && performance.now() - started < 5_000) status = (await create()).statusCode;
    expect(status).toBe(403);
    expect(performance.now() - started).toBeLessThan(KEY_CACHE_TTL_MS);
  });

  test('requests that present a key not in the cache at the same time share one read of it', async () => {
    const m = await newMerchant(db.store);
    let reads = 0;
    const counting = {
      ...db.store,
      query: ((statement, values) => {
        if (/FROM api_keys/.test(statementText(statement))) reads++;
        return db.store.query(statement, values);
      }) as Store['query'],
    };
    const cache = createApiKeyCache({ store: counting });
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => cache.authenticate(m.test)));
      expect(answers.every((answer) => answer.ok)).toBe(true);
      expect(reads).toBe(1);
    } finally {
      await cache.close();
    }
  });

  test('a read sent before a revocation answers no request made after it: that request reads anew and is refused', async () => {
    const m = await newMerchant(db.store);
    const id = await keyIdOf(m.id, m.test);
    let reads = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The real store; the first read of the key runs at once (before the revocation) and only its
    // answer is held back, so it is still in flight when the key is revoked.
    const holding = {
      ...db.store,
      query: (async (statement, values) => {
        const result = await db.store.query(statement, values);
        if (/FROM api_keys/.test(statementText(statement)) && ++reads === 1) await held;
        return result;
      }) as Store['query'],
    };
    const cache = createApiKeyCache({ store: holding });
    try {
      const before = cache.authenticate(m.test);
      await waitFor(async () => reads === 1, 'the first read run');
      await revokeApiKey(db.store, id);
      const after = cache.authenticate(m.test);
      // Its own read, not the one in flight (which would answer it with the key as it was).
      await waitFor(async () => reads === 2, 'a read of its own for the request after the revocation', 5_000);
      expect(await after).toMatchObject({ ok: false, reason: 'revoked' });
      release();
      // The request made before the revocation gets the answer of its time.
      expect((await before).ok).toBe(true);
    } finally {
      release();
      await cache.close();
    }
  });

  test('last_used_at is written on first use and then at most once a minute, however many requests', async () => {
    const m = await newMerchant(db.store);
    const id = await keyIdOf(m.id, m.test);
    const lastUsed = async () => (await db.store.query<{ at: Date | null }>('SELECT last_used_at AS at FROM api_keys WHERE id = $1', [id])).rows[0]!.at;
    expect(await lastUsed()).toBeNull();
    expect(await read(appA, m.test)).toBe(200);
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    for (let i = 0; i < 20; i++) expect(await read(i % 2 ? appA : appB, m.test)).toBe(200);
    expect(await lastUsed()).toEqual(first);
  });
});
