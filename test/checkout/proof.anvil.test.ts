import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Address } from 'viem';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';
import { logger } from '../helpers/delivery.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { startDaemon, type Daemon } from '../../src/daemon.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { verifyWebhook } from '../../src/index.ts';

/**
 * Payers prove payments by transaction hash (POST /checkout/{id}/transactions) against a real
 * chain (anvil as polygon, the real USDC address) and the daemon as it is deployed: an api +
 * worker process that runs no ingester (it looks transactions up with the configured RPC URL),
 * and, from the first test on, an ingest process on the same database. Webhooks go to a real
 * receiver and are verified.
 */
const db = useTestDatabase('checkout_proof_anvil');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-proof-'));
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';

let anvil: Anvil;
let api: Daemon;
let ingest: Daemon | undefined;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let liveKey: string;
let testKey: string;
let secret: string;
let env: Record<string, string>;

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  receiver = await startReceiver();
  env = {
    DATABASE_URL: db.connectionString,
    PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    SVC_POLYGON_RPC_URL: anvil.rpcUrl,
    // Each proof below comes from its own address (X-Forwarded-For), so only the rate-limit test meets the per-IP budget.
    SVC_TRUST_PROXY: 'true',
    LOG_LEVEL: 'silent',
  };
  api = await startDaemon({ config: loadConfig(env), logger, roles: ['api', 'worker'] });
  testKey = api.bootstrap!.testKey;
  liveKey = (await createApiKey(db.store, { merchantId: api.bootstrap!.merchantId, livemode: true })).secret;
  // 1% tolerance: 9.99 pays any 10 USDC session, so with two open the amount cannot tell which.
  await db.store.query('UPDATE merchants SET payment_tolerance_bps = 100 WHERE id = $1', [api.bootstrap!.merchantId]);
  const registered = await http('POST', '/api/v1/webhooks', { key: liveKey, body: { url: `${receiver.url}/hooks` } });
  expect(registered.status).toBe(201);
  secret = registered.body.secret;
}, 60_000);

afterAll(async () => {
  await ingest?.shutdown.kill('test done');
  await api?.shutdown.kill('test done');
  await receiver?.close();
  await anvil?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function http(method: 'GET' | 'POST', url: string, options: { key?: string; body?: unknown; ip?: string } = {}) {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.ip) headers['x-forwarded-for'] = options.ip;
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${api.url}${url}`, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

let proofs = 0;
const prove = (sessionId: string, txHash: string, ip = `10.0.${Math.floor(++proofs / 250)}.${proofs % 250}`) =>
  http('POST', `/checkout/${sessionId}/transactions`, { body: { txHash }, ip });

async function newSession(wallet: string, amount = '10', mode: 'live' | 'test' = 'live'): Promise<{ id: string; amountDueBaseUnits: string }> {
  // A key per session: this file creates more sessions than one key may in a minute.
  const key = mode === 'test' ? testKey : (await createApiKey(db.store, { merchantId: api.bootstrap!.merchantId, livemode: true })).secret;
  const answer = await http('POST', '/api/v1/sessions', { key, body: { amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet } });
  expect(answer.status).toBe(201);
  return answer.body;
}

/** Two 10 USDC sessions on one fresh wallet. */
async function lookAlikes() {
  const wallet = newEvmWallet();
  return { wallet, first: await newSession(wallet), second: await newSession(wallet) };
}

async function pay(to: string, amount: bigint): Promise<`0x${string}`> {
  const hash = await anvil.pay(USDC, to as Address, amount);
  await anvil.waitMined(hash);
  return hash;
}

async function statusOf(id: string): Promise<string> {
  return (await http('GET', `/api/v1/sessions/${id}`, { key: liveKey })).body.status;
}

async function until<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startIngest(): Promise<void> {
  ingest ??= await startDaemon({ config: loadConfig({ ...env, PORT: '0' }), logger, roles: ['ingest'] });
}

/** Waits until the ingester stored the transaction and matching looked at it. */
const checked = (hash: string) =>
  until(
    async () =>
      (
        await db.store.query(
          'SELECT session_id, match_method FROM transfers t WHERE tx_hash = $1 AND NOT EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id)',
          [hash.toLowerCase()],
        )
      ).rows[0],
    `${hash} stored and matched`,
  );

/** Webhook events the receiver got for a session, verified with the endpoint's secret. */
async function webhooksOf(sessionId: string): Promise<string[]> {
  const events = await Promise.all(receiver.received.map((request) => verifyWebhook(request.rawBody, request.headers, secret)));
  return events.filter((event) => (event.data as { id?: string }).id === sessionId).map((event) => event.event);
}

describe('POST /checkout/{id}/transactions', () => {
  test('a payment no amount could attribute, proved before any ingester stored it: 202, then bound by the claim and confirmed with webhooks', async () => {
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    const answer = await prove(second.id, hash);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ object: 'transaction_proof', sessionId: second.id, chain: 'polygon', txHash: hash.toLowerCase(), bound: false });
    expect(answer.body.payment).toMatchObject({ object: 'payment_status', id: second.id, view: 'awaiting' });
    expect((await db.store.query('SELECT session_id, source FROM transaction_claims WHERE tx_hash = $1', [hash])).rows).toEqual([
      { session_id: second.id, source: 'proof' },
    ]);

    await startIngest();
    expect(await checked(hash)).toEqual({ session_id: second.id, match_method: 'claim' });
    await until(async () => (await statusOf(second.id)) === 'confirming', 'confirming');
    await anvil.mine(32);
    await until(async () => (await statusOf(second.id)) === 'confirmed', 'confirmed');
    await until(async () => (await webhooksOf(second.id)).length >= 2, 'webhooks');
    expect(await webhooksOf(second.id)).toEqual(['payment.confirming', 'payment.confirmed']);
    expect(await statusOf(first.id)).toBe('created');
    expect(await webhooksOf(first.id)).toEqual([]);
  }, 90_000);

  test('proved after the ingester left it unmatched: 200 and counted at once; the same proof again answers the same; another session gets 409', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    expect(await checked(hash)).toEqual({ session_id: null, match_method: null });

    const answer = await prove(second.id, hash);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ bound: true, txHash: hash.toLowerCase(), payment: { status: 'confirming', view: 'detected', amountPending: '9.99' } });
    const again = await prove(second.id, hash.toUpperCase().replace('0X', '0x'));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ bound: true, txHash: hash.toLowerCase() });
    const other = await prove(first.id, hash);
    expect(other).toEqual({ status: 409, body: { error: `transaction ${hash.toLowerCase()} is already claimed by another payment session` } });
    expect(await statusOf(first.id)).toBe('created');
  }, 60_000);

  test('concurrent proofs of one transaction for two sessions: exactly one wins', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    await checked(hash);
    const answers = await Promise.all([prove(first.id, hash), prove(second.id, hash)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const winner = answers.find((answer) => answer.status === 200)!.body.sessionId;
    expect((await db.store.query('SELECT session_id FROM transfers WHERE tx_hash = $1', [hash.toLowerCase()])).rows).toEqual([{ session_id: winner }]);
  }, 60_000);

  test('refusals change nothing: another wallet, another session paid by amount, unknown, unreadable, sandbox', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const count = async () => Number((await db.store.query<{ count: string }>('SELECT count(*) FROM transaction_claims')).rows[0]!.count);
    const before = await count();

    const elsewhere = await pay(newEvmWallet(), 9_990_000n);
    const wrongWallet = await prove(second.id, elsewhere);
    expect(wrongWallet.status).toBe(409);
    expect(wrongWallet.body.error).toMatch(new RegExp(`does not pay this session: it does not pay this session's wallet ${wallet}`));

    // Exactly the first session's due amount: matched to it by amount, so not the second's to claim.
    const exact = await pay(wallet, BigInt(first.amountDueBaseUnits));
    expect(await checked(exact)).toEqual({ session_id: first.id, match_method: 'amount' });
    const taken = await prove(second.id, exact);
    expect(taken).toEqual({ status: 409, body: { error: `transaction ${exact.toLowerCase()} already pays another payment session` } });

    const unknown = await prove(second.id, `0x${randomBytes(32).toString('hex')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/was not found on Polygon: it is not in a block yet.*Retry once it is mined/);
    expect((await prove(second.id, '0x1234')).status).toBe(400);
    expect((await prove(second.id, 'not a hash')).body.error).toMatch(/txHash is not a Polygon transaction hash/);
    expect((await prove('ses_00000000000000000000', `0x${'ab'.repeat(32)}`)).status).toBe(404);

    const sandbox = await newSession(newEvmWallet(), '5', 'test');
    const sandboxAnswer = await prove(sandbox.id, `0x${'ab'.repeat(32)}`);
    expect(sandboxAnswer.status).toBe(400);
    expect(sandboxAnswer.body.error).toMatch(/sandbox sessions are on no real chain: pay them with POST \/api\/v1\/sandbox\/sessions\/.*\/pay/);

    expect(await count()).toBe(before);
    expect(await statusOf(second.id)).toBe('created');
  }, 60_000);

  test('proofs are rate-limited per IP address with the public creation budget (10 a minute)', async () => {
    const { second } = await lookAlikes();
    for (let i = 0; i < 10; i++) expect((await prove(second.id, '0x12', '192.0.2.7')).status).toBe(400);
    const refused = await prove(second.id, '0x12', '192.0.2.7');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/10 transaction proofs from one IP address per minute/);
    expect((await prove(second.id, '0x12', '192.0.2.8')).status).toBe(400);
  });

  test("the checkout's JSON instructions name the proof URL (live sessions only)", async () => {
    const live = await newSession(newEvmWallet());
    const instructions = (await http('GET', `/checkout/${live.id}`)).body;
    expect(instructions.proofUrl).toBe(`${api.url}/checkout/${live.id}/transactions`);
    const sandbox = await newSession(newEvmWallet(), '5', 'test');
    expect((await http('GET', `/checkout/${sandbox.id}`)).body.proofUrl).toBeNull();
  });
});
