/**
 * Solana ingest benchmark: how fast the ingester catches up on a backlog (signatures listed,
 * transactions fetched, transfers committed with their cursors), against the litesvm-backed test
 * RPC on loopback, so the numbers are the ingester's and the database's cost, not a provider's.
 *
 *   npx tsx bench/solana-catchup.ts [--payments 2000] [--wallets 4] [--profile]
 *
 * `--profile` writes a CPU profile of the catch-up alone (this process: the ingester and the test
 * RPC server share it) to a temporary file, printed; `npx tsx bench/profileSummary.ts <file>`.
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54365).
 */
import fs from 'node:fs';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createMerchant } from '../src/accounts/merchants.ts';
import { addWallet } from '../src/accounts/wallets.ts';
import { createSolanaIngester } from '../src/ingest/solana/index.ts';
import { loadChains } from '../src/internal/chains.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { startSolanaRpc } from '../test/helpers/solanaRpc.ts';

const { values } = parseArgs({
  options: { payments: { type: 'string', default: '2000' }, wallets: { type: 'string', default: '4' }, profile: { type: 'boolean', default: false } },
});
const PAYMENTS = Number(values.payments);
const WALLETS = Number(values.wallets);
const logger = createLogger({ level: 'warn' });

let connectionString = process.env.DATABASE_URL;
let stopPostgres = async () => {};
let dataDir: string | undefined;
if (!connectionString) {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-solana-'));
  const embedded = await startEmbeddedPostgres({ dataDir, port: Number(process.env.BENCH_PG_PORT ?? 54365), logger });
  connectionString = embedded.connectionString;
  stopPostgres = embedded.stop;
}
await migrate({ connectionString });
const store = createStore({ connectionString });
const rpc = await startSolanaRpc();
try {
  const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'bench' });
  const wallets = [];
  for (let i = 0; i < WALLETS; i++) {
    const wallet = await rpc.wallet();
    await addWallet(store, { merchantId: merchant.id, chain: 'solana', address: wallet.address, verifiedBy: 'operator' });
    wallets.push(wallet);
  }
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10n ** 15n);
  await rpc.fund(payer.address, 'USDT', 10n ** 15n);
  let started = performance.now();
  for (let i = 0; i < PAYMENTS; i++) {
    await rpc.pay({ from: payer, to: wallets[i % WALLETS]!.address, currency: i % 2 ? 'USDT' : 'USDC', amount: 1_000_000n + BigInt(i) });
  }
  rpc.ledger.finalize();
  console.log(`made ${PAYMENTS} payments to ${WALLETS * 2} token accounts in ${((performance.now() - started) / 1000).toFixed(1)} s (litesvm)`);

  const ingester = createSolanaIngester({
    store,
    logger,
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    chain: loadChains().solana,
    rpc: { http: [rpc.url], ws: [] },
  });
  const profiler = values.profile ? new inspector.Session() : undefined;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  started = performance.now();
  await ingester.syncOnce();
  const seconds = (performance.now() - started) / 1000;
  const { rows } = await store.query<{ count: bigint }>("SELECT count(*) FROM transfers WHERE chain = 'solana'");
  const stored = Number(rows[0]!.count);
  console.log(`catch-up: ${stored} transfers in ${seconds.toFixed(2)} s = ${(stored / seconds).toFixed(0)} transfers/s`);
  if (profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    const file = path.join(os.tmpdir(), `svc-bench-solana-${process.pid}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`CPU profile of the catch-up: ${file}`);
  }
  console.log(`RPC calls: ${[...rpc.calls].map(([method, count]) => `${method}=${count}`).join(' ')}`);
  if (stored !== PAYMENTS) throw new Error(`stored ${stored} of ${PAYMENTS}`);
  started = performance.now();
  await ingester.syncOnce();
  console.log(`idle pass (nothing new, ${WALLETS * 2} accounts): ${(performance.now() - started).toFixed(1)} ms`);
  await ingester.stop();
} finally {
  await rpc.stop();
  await store.close();
  await stopPostgres();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
}
