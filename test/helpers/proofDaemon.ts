import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { useTestDatabase } from './db.ts';
import { startAnvil, type Anvil } from './anvil.ts';
import { startReceiver } from './webhookReceiver.ts';
import { logger } from './delivery.ts';
import { newEvmWallet } from './engine.ts';
import { startDaemon, type Daemon } from '../../src/daemon.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { setMerchantRateLimits } from '../../src/api/rateLimits.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { verifyWebhook } from '../../src/index.ts';

/** Polygon's native USDC, installed on anvil at its real address. */
export const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';

/**
 * A daemon as deployed for payers' transaction proofs (POST /checkout/{id}/transactions) against
 * anvil as polygon: an api + worker process that runs no ingester (it looks transactions up with
 * the configured RPC URL) and, once `startIngest` is called, an ingest process on the same
 * database; webhooks to a real receiver, verified. Payers are keyed accounts, so they can sign
 * their proofs; `prove` signs with the account that paid unless told otherwise.
 */
export function useProofDaemon(name: string, options: { toleranceBps?: number } = {}) {
  const db = useTestDatabase(name);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-proof-'));
  const payers = new Map<string, PrivateKeyAccount>();
  let anvil: Anvil;
  let api: Daemon;
  let ingest: Daemon | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let liveKey: string;
  let testKey: string;
  let secret: string;
  let env: Record<string, string>;
  let proofs = 0;
  let requests = 0;

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
      // Each proof comes from its own address (X-Forwarded-For), so only a rate-limit test meets the per-IP budget.
      SVC_TRUST_PROXY: 'true',
      LOG_LEVEL: 'silent',
    };
    api = await startDaemon({ config: loadConfig(env), logger, roles: ['api', 'worker'] });
    testKey = api.bootstrap!.testKey;
    liveKey = (await createApiKey(db.store, { merchantId: api.bootstrap!.merchantId, livemode: true })).secret;
    await db.store.query('UPDATE merchants SET payment_tolerance_bps = $2 WHERE id = $1', [api.bootstrap!.merchantId, options.toleranceBps ?? 100]);
    // Status polls every 100 ms read with one key: the spec's 30 reads a minute would answer 429
    // half a minute long (these tests are not about rate limits; test/api/rateLimits*.test.ts are).
    await setMerchantRateLimits(db.store, { merchantId: api.bootstrap!.merchantId, read: 100_000 });
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

  async function http(method: 'GET' | 'POST', url: string, opts: { key?: string; body?: unknown; ip?: string } = {}) {
    // Each request from its own address unless told (X-Forwarded-For, trusted here): status polls
    // on a slow machine would otherwise spend the 200 requests a minute of one IP address.
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-forwarded-for': opts.ip ?? `10.1.${Math.floor(++requests / 250) % 250}.${requests % 250}`,
    };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${api.url}${url}`, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  /** The proof message of a session for a transaction, from its own instructions (`proofMessage`). */
  async function proofMessageOf(sessionId: string, txHash: string): Promise<string> {
    const template = (await http('GET', `/checkout/${sessionId}`)).body.proofMessage as string;
    return template.replace('{txHash}', txHash.toLowerCase());
  }

  /**
   * Proves `txHash` for a session, signed by `signer` (default: the account that paid it; `null`:
   * no signature) over `message` (default: the session's proof message for this hash).
   */
  async function prove(sessionId: string, txHash: string, opts: { signer?: PrivateKeyAccount | null; message?: string; ip?: string } = {}) {
    const signer = opts.signer === undefined ? payers.get(txHash.toLowerCase()) : opts.signer;
    const body: Record<string, string> = { txHash };
    if (signer) body.signature = await signer.signMessage({ message: opts.message ?? (await proofMessageOf(sessionId, txHash)) });
    return http('POST', `/checkout/${sessionId}/transactions`, { body, ip: opts.ip ?? `10.0.${Math.floor(++proofs / 250)}.${proofs % 250}` });
  }

  async function newSession(wallet: string, amount = '10', mode: 'live' | 'test' = 'live'): Promise<{ id: string; amountDueBaseUnits: string }> {
    // A key per session: a file creates more sessions than one key may in a minute.
    const key = mode === 'test' ? testKey : (await createApiKey(db.store, { merchantId: api.bootstrap!.merchantId, livemode: true })).secret;
    const answer = await http('POST', '/api/v1/sessions', { key, body: { amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet } });
    expect(answer.status).toBe(201);
    return answer.body;
  }

  /** A new keyed payer holding `amount` USDC. */
  async function fundedPayer(amount: bigint): Promise<PrivateKeyAccount> {
    const payer = privateKeyToAccount(generatePrivateKey());
    await anvil.waitMined(await anvil.mint(USDC, payer.address, amount));
    return payer;
  }

  /** `payer` (a new keyed account unless given) pays `amount` USDC base units to `to`; returns the mined hash. */
  async function pay(to: string, amount: bigint, payer?: PrivateKeyAccount): Promise<`0x${string}`> {
    const from = payer ?? (await fundedPayer(amount));
    if (payer) await anvil.waitMined(await anvil.mint(USDC, payer.address, amount));
    const hash = await anvil.transfer(USDC, from.address, to as Address, amount);
    await anvil.waitMined(hash);
    payers.set(hash.toLowerCase(), from);
    return hash;
  }

  /** A session as the merchant's API shows it; anything but a 200 fails the test (a 429 must not read as "not yet"). */
  async function sessionOf(id: string) {
    const answer = await http('GET', `/api/v1/sessions/${id}`, { key: liveKey });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
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

  return {
    db,
    get anvil() {
      return anvil;
    },
    get api() {
      return api;
    },
    get liveKey() {
      return liveKey;
    },
    http,
    prove,
    proofMessageOf,
    newSession,
    fundedPayer,
    pay,
    until,
    payerOf: (hash: string) => payers.get(hash.toLowerCase()),
    /** Two 10 USDC sessions on one fresh wallet. */
    async lookAlikes() {
      const wallet = newEvmWallet();
      return { wallet, first: await newSession(wallet), second: await newSession(wallet) };
    },
    statusOf: async (id: string): Promise<string> => (await sessionOf(id)).status,
    sessionOf,
    async startIngest(): Promise<void> {
      ingest ??= await startDaemon({ config: loadConfig({ ...env, PORT: '0' }), logger, roles: ['ingest'] });
    },
    /** Waits until the ingester stored the transaction and matching looked at it. */
    checked: (hash: string) =>
      until(
        async () =>
          (
            await db.store.query(
              'SELECT session_id, match_method FROM transfers t WHERE tx_hash = $1 AND NOT EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id)',
              [hash.toLowerCase()],
            )
          ).rows[0],
        `${hash} stored and matched`,
      ),
    /** Webhook events the receiver got for a session, verified with the endpoint's secret. */
    async webhooksOf(sessionId: string): Promise<string[]> {
      const events = await Promise.all(receiver.received.map((request) => verifyWebhook(request.rawBody, request.headers, secret)));
      return events.filter((event) => (event.data as { id?: string }).id === sessionId).map((event) => event.event);
    },
  };
}
