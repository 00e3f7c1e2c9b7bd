/**
 * Merchant API benchmark: requests per second and latency of payment creation (one wallet, and
 * spread over many wallets; with and without Idempotency-Key) and of reads, through the whole
 * stack: per-IP and per-key rate limits counted in Postgres, authentication, validation,
 * idempotency, the unique-due-amount lock, the insert.
 *
 *   npx tsx bench/api.ts [--seconds 5] [--connections 32]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54367). Client and server share this machine, so the numbers are a
 * floor for a dedicated host.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts';
import { createApiKey, createMerchant } from '../src/accounts/index.ts';
import { benchApi, percentile } from './lib.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '32' } } });
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const WALLETS = Array.from({ length: 64 }, () => privateKeyToAddress(generatePrivateKey()));

async function main() {
  const { store, box, url, close } = await benchApi('api', 54367);
  const { merchant } = await createMerchant(store, box, { name: 'Bench Shop' });
  const { secret } = await createApiKey(store, { merchantId: merchant.id, livemode: false });
  const created: string[] = [];

  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  async function load(
    label: string,
    request: (i: number) => { method: 'GET' | 'POST'; path: string; body?: unknown; headers?: Record<string, string> },
    expected: number,
  ) {
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    let errors = 0;
    let counter = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const spec = request(counter++);
          const started = performance.now();
          const response = await pool.request({
            method: spec.method,
            path: spec.path,
            headers: { 'x-api-key': secret, ...(spec.body ? { 'content-type': 'application/json' } : {}), ...spec.headers },
            ...(spec.body ? { body: JSON.stringify(spec.body) } : {}),
          });
          const text = await response.body.text();
          if (response.statusCode !== expected) errors++;
          else if (spec.method === 'POST' && created.length < 1000) created.push(JSON.parse(text).id);
          latencies.push(performance.now() - started);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(44)} ${(latencies.length / SECONDS).toFixed(0).padStart(6)} req/s   p50 ${percentile(latencies, 50).toFixed(1)} ms   p99 ${percentile(latencies, 99).toFixed(1)} ms   errors ${errors}`,
    );
  }

  const payment = (i: number, wallet: string) => ({ amount: `${10 + (i % 500)}.25`, currency: 'USDC', chain: 'polygon', merchantWallet: wallet });
  console.log(`api bench: ${SECONDS} s per route, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} CPUs`);
  await load('warm-up (not a result)', (i) => ({ method: 'POST', path: '/api/v1/payments', body: payment(i, WALLETS[i % 64]!) }), 201);
  await load('POST /payments, one wallet', (i) => ({ method: 'POST', path: '/api/v1/payments', body: payment(i, WALLET) }), 201);
  await load('POST /payments, 64 wallets', (i) => ({ method: 'POST', path: '/api/v1/payments', body: payment(i, WALLETS[i % 64]!) }), 201);
  const run = randomBytes(4).toString('hex');
  await load(
    'POST /payments, 64 wallets, Idempotency-Key',
    (i) => ({ method: 'POST', path: '/api/v1/payments', body: payment(i, WALLETS[i % 64]!), headers: { 'idempotency-key': `${run}-${i}` } }),
    201,
  );
  await load(
    'POST /payments, replayed Idempotency-Key',
    (i) => ({
      method: 'POST',
      path: '/api/v1/payments',
      body: payment(i % 100, WALLETS[(i % 100) % 64]!),
      headers: { 'idempotency-key': `${run}-${i % 100}` },
    }),
    201,
  );
  await load('GET /health (per-IP limit, SELECT 1)', () => ({ method: 'GET', path: '/api/v1/health' }), 200);
  await load('GET /currencies (+ auth, per-key limit)', () => ({ method: 'GET', path: '/api/v1/currencies' }), 200);
  await load('GET /payments/:id', (i) => ({ method: 'GET', path: `/api/v1/payments/${created[i % created.length]}` }), 200);
  await load('GET /payments?limit=20', () => ({ method: 'GET', path: '/api/v1/payments?limit=20' }), 200);
  await load('POST /payments, invalid (400)', (i) => ({ method: 'POST', path: '/api/v1/payments', body: { ...payment(i, WALLET), amount: '1.1234567' } }), 400);
  await pool.close();

  await close();
}

await main();
