import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createStore, type Store } from '../../src/store/index.ts';
import { setMerchantRateLimits } from '../../src/api/rateLimits.ts';
import { buildApi, newMerchant, WALLET } from '../helpers/api.ts';
import { loadConfig } from '../../src/internal/config.ts';

const db = useTestDatabase('api_rate_limits');
let storeB: Store;
let appA: ReturnType<typeof buildApi>;
let appB: ReturnType<typeof buildApi>;
let urlA: string;
let urlB: string;

// The spec's per-key limits; the per-IP limit is raised here and tested with its own apps below.
beforeAll(async () => {
  storeB = createStore({ connectionString: db.connectionString, max: 5 });
  appA = buildApi(db.store, { rateLimits: { ip: 100_000 } });
  appB = buildApi(storeB, { rateLimits: { ip: 100_000 } });
  urlA = await appA.listen({ port: 0, host: '127.0.0.1' });
  urlB = await appB.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await appA.close();
  await appB.close();
  await storeB.close();
});

/** Limits count in one-minute windows; a test that starts in the last `margin` seconds of one waits for the next. */
async function freshWindow(margin = 5): Promise<void> {
  const { rows } = await db.store.query<{ left: string }>(`SELECT (60 - extract(epoch FROM now())::numeric % 60)::text AS left`);
  const left = Number(rows[0]!.left);
  if (left < margin) await new Promise((resolve) => setTimeout(resolve, left * 1000 + 100));
}

async function send(base: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

const payment = { amount: '2', currency: 'USDC', chain: 'optimism', merchantWallet: WALLET };

describe('client IP behind a proxy', () => {
  test('SVC_TRUST_PROXY names the proxies whose X-Forwarded-For gives the client IP; by default the socket address counts', async () => {
    const behind = buildApi(db.store, { rateLimits: { ip: 2 }, env: { SVC_TRUST_PROXY: '127.0.0.1' } });
    const direct = buildApi(db.store, { rateLimits: { ip: 2 } });
    await freshWindow(5);
    const tag = Math.floor(Math.random() * 250);
    const visit = (app: typeof behind, forwarded: string) =>
      app
        .inject({ method: 'GET', url: '/api/v1/health', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': forwarded } })
        .then((answer) => answer.statusCode);
    expect([await visit(behind, `10.7.${tag}.1`), await visit(behind, `10.7.${tag}.1`), await visit(behind, `10.7.${tag}.1`)]).toEqual([200, 200, 429]);
    expect(await visit(behind, `10.7.${tag}.2`)).toBe(200);
    // Not trusted (the default): X-Forwarded-For is ignored and the socket address counts.
    const socket = `10.8.${tag}.9`;
    const viaSocket = (forwarded: string) =>
      direct
        .inject({ method: 'GET', url: '/api/v1/health', remoteAddress: socket, headers: { 'x-forwarded-for': forwarded } })
        .then((answer) => answer.statusCode);
    expect([await viaSocket('1.1.1.1'), await viaSocket('2.2.2.2'), await viaSocket('3.3.3.3')]).toEqual([200, 200, 429]);
    await behind.close();
    await direct.close();
    expect(() => loadConfig({ SVC_TRUST_PROXY: 'the proxy' })).toThrow(
      /SVC_TRUST_PROXY="the proxy": must be true, false, a hop count, or comma-separated IP addresses or CIDRs/,
    );
    expect(loadConfig({ SVC_TRUST_PROXY: '10.0.0.0/8, 192.168.1.1' }).trustProxy).toBe('10.0.0.0/8,192.168.1.1');
    expect(loadConfig({ SVC_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({}).trustProxy).toBe(false);
  });
});

describe('rate limits (spec §8), counted in Postgres across two processes', () => {
  test('payment creation: 10 per minute per key, alternating processes; the 11th is 429 with Retry-After and RateLimit-*', async () => {
    await freshWindow();
    const m = await newMerchant(db.store);
    const statuses = [];
    for (let i = 0; i < 10; i++) {
      const answer = await send(i % 2 ? urlA : urlB, 'POST', i % 3 ? '/api/v1/payments' : '/v1/sessions', m.test, payment);
      statuses.push(answer.status);
      expect(answer.headers.get('ratelimit-limit')).toBe('10');
      expect(answer.headers.get('ratelimit-remaining')).toBe(String(9 - i));
    }
    expect(statuses).toEqual(Array(10).fill(201));
    const refused = await send(urlA, 'POST', '/api/v1/checkout/sessions', m.test, payment);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/^rate limit exceeded: 10 payment creations per key per minute; retry in \d+ s$/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    // Reads have their own budget, and another key its own.
    expect((await send(urlB, 'GET', '/api/v1/payments', m.test)).status).toBe(200);
    expect((await send(urlB, 'POST', '/api/v1/payments', await m.key(false), payment)).status).toBe(201);
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(11);
  });

  test('reads: 30 per minute per key across both processes', async () => {
    await freshWindow();
    const m = await newMerchant(db.store);
    const answers = await Promise.all(Array.from({ length: 34 }, (_, i) => send(i % 2 ? urlA : urlB, 'GET', '/api/v1/currencies', m.test)));
    expect(answers.filter((answer) => answer.status === 200).length).toBe(30);
    expect(answers.filter((answer) => answer.status === 429).length).toBe(4);
    expect(answers.find((answer) => answer.status === 429)!.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  test("operators can raise a merchant's limits", async () => {
    await freshWindow();
    const m = await newMerchant(db.store);
    await setMerchantRateLimits(db.store, { merchantId: m.id, read: 50 });
    const answers = await Promise.all(Array.from({ length: 52 }, (_, i) => send(i % 2 ? urlA : urlB, 'GET', '/api/v1/status', m.test)));
    expect(answers.filter((answer) => answer.status === 200).length).toBe(50);
    expect(answers[0]!.headers.get('ratelimit-limit')).toBe('50');
  });

  test('200 per minute per IP on any endpoint, before authentication', async () => {
    await freshWindow(15);
    const app1 = buildApi(db.store, { rateLimits: { ip: 200 } });
    const app2 = buildApi(storeB, { rateLimits: { ip: 200 } });
    await app1.ready();
    await app2.ready();
    const ip = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const answers = [];
    for (let i = 0; i < 201; i++) {
      const app = i % 2 ? app1 : app2;
      answers.push(await app.inject({ method: 'GET', url: i % 2 ? '/api/v1/health' : '/v1/payments', remoteAddress: ip }));
    }
    expect(answers.slice(0, 200).every((answer) => answer.statusCode !== 429)).toBe(true);
    const last = answers[200]!;
    expect(last.statusCode).toBe(429);
    expect(last.json().error).toMatch(/^rate limit exceeded: 200 requests from one IP address per minute/);
    expect(last.headers['retry-after']).toMatch(/^\d+$/);
    // Another address is unaffected.
    expect((await app1.inject({ method: 'GET', url: '/api/v1/health', remoteAddress: '10.200.0.1' })).statusCode).toBe(200);
    await app1.close();
    await app2.close();
  });

  test("the dashboard spends a per-IP budget of its own: its pages neither eat the API's nor are locked out by it", async () => {
    await freshWindow(15);
    const app = buildApi(db.store, { rateLimits: { ip: 5, dashboardIp: 8 } });
    await app.ready();
    try {
      const ip = `10.8.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
      const page = () => app.inject({ method: 'GET', url: '/dashboard/sign-in', remoteAddress: ip });
      const api = () => app.inject({ method: 'GET', url: '/api/v1/health', remoteAddress: ip });
      for (let i = 0; i < 8; i++) expect((await page()).statusCode).toBe(200);
      // Eight dashboard requests left the API's five untouched.
      for (let i = 0; i < 5; i++) expect((await api()).statusCode).toBe(200);
      expect((await api()).statusCode).toBe(429);
      const refused = await page();
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['content-type']).toMatch(/^text\/html/);
      expect(refused.body).toMatch(/rate limit exceeded: 8 requests from one IP address per minute/);
    } finally {
      await app.close();
    }
  });
});
