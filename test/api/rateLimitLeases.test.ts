import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createStore, type Store } from '../../src/store/index.ts';
import { createRateLimiter, setMerchantRateLimits } from '../../src/api/rateLimits.ts';
import { newMerchant } from '../helpers/api.ts';

/**
 * The limiter behind the per-IP and per-key limits, two instances on two pools standing for two
 * processes. Limits of 1,000 a minute and more are taken from Postgres in leases (a thousandth of
 * the limit at a time), smaller ones request by request.
 */
const db = useTestDatabase('api_rate_limit_leases');
let storeB: Store;
beforeAll(() => {
  storeB = createStore({ connectionString: db.connectionString, max: 3 });
});
afterAll(() => storeB.close());

/** Limits count in one-minute windows; a test that starts in the last `margin` seconds of one waits for the next. */
async function freshWindow(margin = 10): Promise<void> {
  const { rows } = await db.store.query<{ left: string }>(`SELECT (60 - extract(epoch FROM now())::numeric % 60)::text AS left`);
  const left = Number(rows[0]!.left);
  if (left < margin) await new Promise((resolve) => setTimeout(resolve, left * 1000 + 100));
}

const bucketName = (label: string) => `test:${label}:${Math.random().toString(36).slice(2)}`;

async function sharedCount(bucket: string): Promise<number> {
  const { rows } = await db.store.query<{ count: number }>('SELECT coalesce(sum(count), 0)::int AS count FROM rate_limit_counters WHERE bucket = $1', [bucket]);
  return rows[0]!.count;
}

describe('rate limits taken in leases', () => {
  test('two processes together never admit more than the limit; each leaves at most one lease unspent', async () => {
    await freshWindow();
    const [a, b] = [createRateLimiter(db.store), createRateLimiter(storeB)];
    const bucket = bucketName('lease');
    const limit = 3_000; // leases of 3
    let allowed = 0;
    // 3,400 requests, 20 at a time in each process.
    for (let round = 0; round < 85; round++) {
      const hits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).take({ bucket, limit })));
      allowed += hits.filter((hit) => hit.allowed).length;
    }
    expect(allowed).toBeLessThanOrEqual(limit);
    // What the other process still holds when one is refused: less than a lease.
    expect(allowed).toBeGreaterThan(limit - 3);
    // Counted in Postgres per lease, not per request: far fewer statements than requests, the same total.
    expect(await sharedCount(bucket)).toBeGreaterThanOrEqual(limit);
  });

  test('below 1,000 a minute every request is counted in Postgres: concurrent requests in one process are admitted exactly', async () => {
    await freshWindow();
    const limiter = createRateLimiter(db.store);
    const bucket = bucketName('exact');
    const hits = await Promise.all(Array.from({ length: 45 }, () => limiter.take({ bucket, limit: 30 })));
    expect(hits.filter((hit) => hit.allowed)).toHaveLength(30);
    expect(hits.filter((hit) => !hit.allowed).every((hit) => hit.remaining === 0 && hit.resetSeconds >= 1 && hit.resetSeconds <= 60)).toBe(true);
    // The remaining budget counts down request by request across the admitted ones.
    expect(
      hits
        .filter((hit) => hit.allowed)
        .map((hit) => hit.remaining)
        .sort((x, y) => y - x),
    ).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
    // A refusal, once the window's budget is known to be spent, is answered from memory.
    const before = await sharedCount(bucket);
    expect((await limiter.take({ bucket, limit: 30 })).allowed).toBe(false);
    expect(await sharedCount(bucket)).toBe(before);
  });

  test("an operator's override replaces the limit from the next lease, in every process", async () => {
    await freshWindow();
    const m = await newMerchant(db.store);
    await setMerchantRateLimits(db.store, { merchantId: m.id, read: 3 });
    const [a, b] = [createRateLimiter(db.store), createRateLimiter(storeB)];
    const bucket = bucketName('override');
    const hits = [];
    for (let i = 0; i < 5; i++) hits.push(await (i % 2 ? a : b).take({ bucket, limit: 100_000, merchantId: m.id, klass: 'read' }));
    expect(hits.map((hit) => hit.allowed)).toEqual([true, true, true, false, false]);
    expect(hits[0]!.limit).toBe(3);
  });
});
