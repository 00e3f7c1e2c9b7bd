/**
 * Backfill throughput of the EVM ingester, next to the raw `eth_getLogs` speed of the same node.
 *
 *   npx tsx bench/ingest.ts [--transfers 100000] [--per-tx 1000] [--wallets 100]
 *
 * Starts anvil (chain id 137, the real polygon token addresses), mints the transfers into
 * watched wallets through a batch minter (`--per-tx` Transfer logs per block), then:
 * 1. raw: the same `eth_getLogs` filter the ingester uses (tokens, Transfer topic, recipient
 *    topics) over the whole range in the ingester's starting range size, sequentially, bodies
 *    parsed as JSON and nothing else;
 * 2. ingest: a fresh checkpoint, createEvmIngester backfilling every block into Postgres
 *    (transfers, unfinalized headers, checkpoints), timed until the checkpoint reaches the head.
 * Postgres is DATABASE_URL (a superuser URL) or an embedded cluster under .data/bench-ingest.
 * Each phase also prints the CPU seconds it cost (from /proc, Linux only; Postgres only when it
 * runs on this machine): this bench process, anvil and Postgres. On a machine shared with other
 * work the wall times swing with the load; the CPU each phase needed varies far less.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getAddress, numberToHex, pad, type Address } from 'viem';
import { startAnvil } from '../test/helpers/anvil.ts';
import { mintMany } from '../test/helpers/batchMinter.ts';
import { loadChains } from '../src/internal/chains.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createStore } from '../src/store/index.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { addWallet, createMerchant } from '../src/accounts/index.ts';
import { createEvmIngester } from '../src/ingest/evm/ingester.ts';
import { createIngestMetrics } from '../src/ingest/metrics.ts';
import { createRpc } from '../src/ingest/evm/rpc.ts';
import { TRANSFER_TOPIC } from '../src/ingest/evm/transfers.ts';
import { createDatabaseCpuMeter } from './databaseStats.ts';
import fs from 'node:fs';

const { values } = parseArgs({
  options: {
    transfers: { type: 'string', default: '100000' },
    'per-tx': { type: 'string', default: '1000' },
    wallets: { type: 'string', default: '100' },
  },
});
const TRANSFERS = Number(values.transfers);
const PER_TX = Number(values['per-tx']);
const WALLETS = Number(values.wallets);

const logger = createLogger({ level: (process.env.LOG_LEVEL as 'warn') ?? 'warn' });
const chain = loadChains().polygon;
const usdc = chain.tokens.find((token) => token.symbol === 'USDC')!.address as Address;

const log = (text: string) => process.stderr.write(`${text}\n`);

let adminUrl = process.env.DATABASE_URL;
let stopPg = async () => {};
if (!adminUrl) {
  const embedded = await startEmbeddedPostgres({ dataDir: path.resolve('.data/bench-ingest'), port: 54352, logger });
  adminUrl = embedded.connectionString;
  stopPg = embedded.stop;
}
const dbName = `bench_ingest_${Date.now()}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const connectionString = url.toString();
await migrate({ connectionString });
const store = createStore({ connectionString });

const anvil = await startAnvil({ chain: 'polygon' });
const databaseCpu = await createDatabaseCpuMeter(adminUrl);
/** CPU seconds (user + system) of this process, anvil and Postgres since `meter()` was called. */
function meter() {
  const processBefore = process.cpuUsage();
  const anvilBefore = anvilTicks();
  const databaseBefore = databaseCpu.snapshot();
  return () => {
    const own = process.cpuUsage(processBefore);
    const anvilAfter = anvilTicks();
    const database = databaseCpu.since(databaseBefore);
    const seconds = (value: number | undefined, scale: number) => (value === undefined ? null : Number((value / scale).toFixed(2)));
    return {
      bench_process: seconds(own.user + own.system, 1e6),
      anvil: seconds(anvilAfter === undefined || anvilBefore === undefined ? undefined : anvilAfter - anvilBefore, 100),
      postgres: seconds(database, 1e6),
    };
  };
}
/** anvil's CPU time in clock ticks (1/100 s), or undefined without /proc. */
function anvilTicks(): number | undefined {
  try {
    const fields = fs
      .readFileSync(`/proc/${anvil.process.pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}
try {
  await anvil.installChainTokens();
  // Room for --per-tx mints in one block (each mint costs ~30-50k gas).
  await anvil.client.request({ method: 'evm_setBlockGasLimit' as never, params: [numberToHex(BigInt(PER_TX) * 60_000n + 10_000_000n)] as never });
  const wallets = Array.from({ length: WALLETS }, (_, i) => getAddress(pad(numberToHex(0x1000 + i), { size: 20 })));
  const { merchant } = await createMerchant(store, createSecretBox(Buffer.alloc(32, 1)), { name: 'bench' });
  for (const address of wallets) await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address, verifiedBy: 'operator' });

  const startBlock = await anvil.blockNumber();
  let started = Date.now();
  await mintMany(anvil, { token: usdc, recipients: wallets, count: TRANSFERS, firstAmount: 1n, perTx: PER_TX });
  const head = await anvil.blockNumber();
  log(`minted ${TRANSFERS} transfers in blocks ${startBlock + 1n}..${head} in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // 1. Raw eth_getLogs, same filter and range size as the ingester starts with.
  const range = BigInt(chain.logs!.initialRange);
  const topics = wallets.map((address) => pad(address.toLowerCase() as Address, { size: 32 }));
  started = performance.now();
  const rawCpu = meter();
  let rawLogs = 0;
  for (let from = 0n; from <= head; from += range) {
    const to = from + range - 1n < head ? from + range - 1n : head;
    const response = await fetch(anvil.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getLogs',
        params: [
          {
            fromBlock: numberToHex(from),
            toBlock: numberToHex(to),
            address: chain.tokens.map((t) => t.address.toLowerCase()),
            topics: [TRANSFER_TOPIC, null, topics],
          },
        ],
      }),
    });
    const body = (await response.json()) as { result?: unknown[]; error?: unknown };
    if (!body.result) throw new Error(`eth_getLogs failed: ${JSON.stringify(body.error)}`);
    rawLogs += body.result.length;
  }
  const rawSeconds = (performance.now() - started) / 1000;
  const rawCpuSeconds = rawCpu();

  // 2. The ingester's backfill from scratch.
  const metrics = createIngestMetrics(createMetricsRegistry({ defaultMetrics: false }));
  const controller = new AbortController();
  const rpc = createRpc({ chain: 'polygon', urls: [anvil.rpcUrl], logger, metrics, signal: controller.signal, timeoutMs: 60_000 });
  const ingester = createEvmIngester({
    chain,
    rpc,
    wsUrls: [],
    store,
    logger,
    metrics,
    onChainChange: () => {},
    signal: controller.signal,
    backfillBlocks: Number(head) + 1,
    pollMs: 20,
  });
  started = performance.now();
  const ingestCpu = meter();
  const running = ingester.run();
  for (;;) {
    const { rows } = await store.query<{ processed_block: bigint | null }>("SELECT processed_block FROM chain_heads WHERE chain = 'polygon'");
    if (rows[0]?.processed_block !== undefined && rows[0].processed_block !== null && rows[0].processed_block >= head) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  const ingestCpuSeconds = ingestCpu();
  controller.abort();
  await running;
  await rpc.close();
  const { rows } = await store.query<{ n: bigint }>("SELECT count(*) AS n FROM transfers WHERE chain = 'polygon' AND status = 'observed'");
  const stored = Number(rows[0]!.n);
  if (stored !== TRANSFERS || rawLogs !== TRANSFERS) throw new Error(`expected ${TRANSFERS} transfers, raw saw ${rawLogs}, ingest stored ${stored}`);

  const result = {
    transfers: TRANSFERS,
    blocks: Number(head - startBlock),
    per_block: PER_TX,
    wallets: WALLETS,
    raw_get_logs: { seconds: Number(rawSeconds.toFixed(2)), logs_per_second: Math.round(rawLogs / rawSeconds), cpu_seconds: rawCpuSeconds },
    ingest_backfill: { seconds: Number(ingestSeconds.toFixed(2)), transfers_per_second: Math.round(stored / ingestSeconds), cpu_seconds: ingestCpuSeconds },
    ingest_vs_raw: `${Math.round((100 * rawSeconds) / ingestSeconds)} %`,
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await anvil.stop();
  await store.close();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  await stopPg();
}
