import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort, startAnvil, type Anvil } from '../helpers/anvil.ts';
import { installEip3009Token } from '../helpers/eip3009Token.ts';
import { box, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { newSolanaKeypair } from '../helpers/svmPayments.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';

/**
 * coinbase/x402's own e2e programs against this gateway's facilitator: their hono server
 * (`e2e/servers/hono`) settles through the gateway (a facilitator entry that adds the merchant's
 * API key, as their external-proxies do) and their fetch client (`e2e/clients/fetch`) pays its
 * EIP-3009 endpoint, on anvil as base with USDC at its real address. Runs only from
 * bench/x402-e2e/run.sh, which installs their npm packages into SVC_X402_E2E_DIR (docs/agents.md).
 */
const work = process.env.SVC_X402_E2E_DIR;
const db = useTestDatabase('x402_coinbase_e2e');
const USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const USDT: Address = '0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2';
const payerKey = generatePrivateKey();
const relayerKey = generatePrivateKey();
let anvil: Anvil;
let app: ReturnType<typeof createHttp>;
let baseUrl: string;
let wallet: Address;
let merchantKey: string;
const servers: http.Server[] = [];
const children: ChildProcess[] = [];

/** A local HTTP server; its URL. */
async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const body = async (request: http.IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/** Runs one of their programs with tsx from the scratch directory; resolves with its output when it exits. */
function run(dir: string, env: Record<string, string>, onLine?: (line: string) => void): { child: ChildProcess; done: Promise<string> } {
  const child = spawn(path.join(work!, 'node_modules/.bin/tsx'), ['index.ts'], {
    cwd: path.join(work!, dir),
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    for (const line of chunk.toString().split('\n')) if (line) onLine?.(line);
  };
  child.stdout!.on('data', read);
  child.stderr!.on('data', read);
  return { child, done: new Promise((resolve) => child.on('exit', () => resolve(output))) };
}

beforeAll(async () => {
  if (!work) return;
  anvil = await startAnvil({ chain: 'base' });
  await installEip3009Token(anvil, USDC, 6);
  const payer = privateKeyToAccount(payerKey).address;
  await anvil.waitMined(await anvil.mint(USDC, payer, 10_000_000n));
  await anvil.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 18n });
  const config = loadConfig({ SVC_BASE_RPC_URL: anvil.rpcUrl, SVC_BASE_RELAYER_KEY: relayerKey, SVC_PUBLIC_URL: 'http://127.0.0.1:1', LOG_LEVEL: 'silent' });
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const x402 = createX402({ store: db.store, logger, metrics, config, pollMs: 100 });
  app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const merchant = await newMerchant(db.store, 'e2e shop');
  merchantKey = merchant.live;
  wallet = newEvmWallet() as Address;
  await addWallet(db.store, { merchantId: merchant.id, chain: 'base', address: wallet, verifiedBy: 'operator' });
});

afterAll(async () => {
  for (const child of children) child.kill('SIGTERM');
  for (const server of servers) server.close();
  await app?.close();
  await anvil?.stop();
});

describe.skipIf(!work)("coinbase/x402's e2e client and server against the gateway's facilitator (bench/x402-e2e/run.sh)", () => {
  test('their hono server settles their fetch client’s EIP-3009 payment through the gateway into the merchant wallet', async () => {
    // The facilitator entry: their server's HTTPFacilitatorClient sends no credentials, so it adds the merchant's key.
    const facilitator = await listen(async (request, response) => {
      const upstream = await fetch(`${baseUrl}/api/v1/x402${request.url}`, {
        method: request.method!,
        headers: { authorization: `Bearer ${merchantKey}`, 'content-type': 'application/json' },
        ...(request.method === 'POST' ? { body: await body(request) } : {}),
      });
      response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    });
    // Their harness's mock facilitator: only so their server's start-up check passes for routes the gateway does not settle (upto, solana devnet).
    const mock = await listen((request, response) => {
      const kinds = [
        { x402Version: 2, scheme: 'upto', network: 'eip155:8453' },
        { x402Version: 2, scheme: 'exact', network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', extra: { feePayer: newSolanaKeypair().address } },
      ];
      const answer = request.url === '/supported' ? { kinds, extensions: [], signers: {} } : { isValid: false, success: false, invalidReason: 'mock' };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
    const port = await freePort();
    let listening!: () => void;
    const started = new Promise<void>((resolve) => (listening = resolve));
    const server = run(
      'server',
      {
        PORT: String(port),
        EVM_NETWORK: 'eip155:8453',
        EVM_PAYEE_ADDRESS: wallet,
        SVM_PAYEE_ADDRESS: newSolanaKeypair().address,
        EVM_PERMIT2_ASSET: USDT,
        FACILITATOR_URL: facilitator,
        MOCK_FACILITATOR_URL: mock,
      },
      (line) => line.includes(String(port)) && listening(),
    );
    await Promise.race([started, server.done.then((output) => Promise.reject(new Error(`their server exited:\n${output}`)))]);

    const client = await run('client', {
      RESOURCE_SERVER_URL: `http://127.0.0.1:${port}`,
      ENDPOINT_PATH: '/exact/evm/eip3009',
      EVM_PRIVATE_KEY: payerKey,
      SVM_PRIVATE_KEY: newSolanaKeypair().base58,
      EVM_NETWORK: 'eip155:8453',
      EVM_RPC_URL: anvil.rpcUrl,
    }).done;
    const result = JSON.parse(
      client
        .trim()
        .split('\n')
        .findLast((line) => line.startsWith('{'))!,
    );
    expect(result, client).toMatchObject({ success: true, status_code: 200, payment_response: { success: true, network: 'eip155:8453' } });
    expect(await anvil.balanceOf(USDC, wallet)).toBe(1_000n); // their route's price, $0.001, unchanged
    const { rows } = await db.store.query('SELECT source, status FROM x402_settlements WHERE tx_hash = $1', [
      result.payment_response.transaction.toLowerCase(),
    ]);
    expect(rows).toEqual([{ source: 'facilitator', status: 'settled' }]);
  }, 120_000);
});
