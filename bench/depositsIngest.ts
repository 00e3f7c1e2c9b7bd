/**
 * Ingest and matching with many watched deposit addresses (issue 25; docs/ingest-evm.md#deposit-addresses).
 *
 *   npx tsx bench/depositsIngest.ts [--addresses 100000] [--transfers 20000] [--paying 2000] [--per-tx 1000]
 *
 * Makes `--addresses` open live `address` mode sessions on polygon (their CREATE2 deposit
 * addresses computed as the API does, rows written in bulk), then on anvil (chain id 137, the real
 * token addresses) mints `--transfers` USDC Transfer logs, `--per-tx` per block: `--paying` of them
 * to deposit addresses, the rest to other addresses (the chain's token traffic the ingester has to
 * read and throw away). Then measures:
 * 1. the watched set: the first read of every open deposit address (time, heap), and a refresh
 *    with nothing new (what every ingest cycle costs);
 * 2. the EVM ingester's backfill from scratch over those blocks (one `eth_getLogs` per range,
 *    filtered by token contract only, recipients filtered in process), checked to store exactly
 *    the transfers to deposit addresses;
 * 3. the engine matching them (by address, rule 0) and evaluating their sessions.
 * Postgres is DATABASE_URL (a superuser URL) or an embedded cluster under .data/bench-deposits.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getAddress, numberToHex, pad, type Address } from 'viem';
import { startAnvil } from '../test/helpers/anvil.ts';
import { mintMany } from '../test/helpers/batchMinter.ts';
import { loadChains } from '../src/internal/chains.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { newId, createSecretBox } from '../src/internal/crypto.ts';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createStore } from '../src/store/index.ts';
import { createMerchant } from '../src/accounts/index.ts';
import { depositAddressFor } from '../src/payments/attribution.ts';
import { createEvmIngester } from '../src/ingest/evm/ingester.ts';
import { createWatchedWallets } from '../src/ingest/evm/watched.ts';
import { createIngestMetrics } from '../src/ingest/metrics.ts';
import { createRpc } from '../src/ingest/evm/rpc.ts';
import { createEngine } from '../src/engine/index.ts';

/** What {@link benchDepositsIngest} is asked to do (the command line's flags). */
export interface DepositsIngestOptions {
  addresses: number;
  transfers: number;
  paying: number;
  perTx: number;
}

/** Runs the three measurements above and returns their figures (also `bench/deposits.ts --only ingest`). */
export async function benchDepositsIngest(options: DepositsIngestOptions): Promise<Record<string, unknown>> {
  const ADDRESSES = options.addresses;
  const TRANSFERS = options.transfers;
  const PAYING = Math.min(options.paying, ADDRESSES, TRANSFERS);
  const PER_TX = options.perTx;

  const logger = createLogger({ level: (process.env.LOG_LEVEL as 'warn') ?? 'warn' });
  const chain = loadChains().polygon;
  const usdc = chain.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
  const log = (text: string) => process.stderr.write(`${text}\n`);
  const seconds = (since: number) => Number(((performance.now() - since) / 1000).toFixed(2));
  const heapMb = () => Number((process.memoryUsage().heapUsed / 1048576).toFixed(1));

  let adminUrl = process.env.DATABASE_URL;
  let stopPg = async () => {};
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres({ dataDir: path.resolve('.data/bench-deposits'), port: 54353, logger });
    adminUrl = embedded.connectionString;
    stopPg = embedded.stop;
  }
  const dbName = `bench_deposits_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const connectionString = url.toString();
  await migrate({ connectionString });
  const store = createStore({ connectionString });
  const anvil = await startAnvil({ chain: 'polygon' });

  try {
    await anvil.installChainTokens();
    await anvil.client.request({ method: 'evm_setBlockGasLimit' as never, params: [numberToHex(BigInt(PER_TX) * 60_000n + 10_000_000n)] as never });
    const { merchant } = await createMerchant(store, createSecretBox(Buffer.alloc(32, 1)), { name: 'bench' });
    const wallet = getAddress(pad('0xbe4c', { size: 20 }));

    // Open address-mode sessions, as POST /sessions makes them (the same columns), in bulk, created
    // evenly over the last 24 hours, so a refresh re-reads only the last minute's, as in production;
    // all still before expiry, so the engine's pass measures matching and evaluating the paid ones,
    // not expiring the rest.
    let started = performance.now();
    const deposits: Address[] = [];
    for (let done = 0; done < ADDRESSES; done += 10_000) {
      const ids = Array.from({ length: Math.min(10_000, ADDRESSES - done) }, () => newId('ses'));
      const addresses = ids.map((id) => depositAddressFor({ payTo: wallet, sessionId: id }) as Address);
      deposits.push(...addresses);
      await store.query(
        `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
         required_confirmations, expires_at, monitor_until, attribution, deposit_address, created_at)
       SELECT d.id, $1, true, 'created', 'polygon', 'USDC', 6, 25000000, 25000000, 250000, $2, $3, 32, now() + interval '1 hour', now() + interval '25 hours', 'address', d.address, c.at
         FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS d(id, address, n)
         CROSS JOIN LATERAL (SELECT now() - make_interval(secs => 86400.0 * ($6::int + d.n) / $7::int) AS at) c`,
        [merchant.id, [usdc], wallet, ids, addresses, done, ADDRESSES],
      );
    }
    await store.query('ANALYZE payment_sessions');
    const sessionsSeconds = seconds(started);
    log(`${ADDRESSES} address-mode sessions in ${sessionsSeconds} s`);

    // 1. The watched set.
    const heapBefore = heapMb();
    const watched = createWatchedWallets({ chain: 'polygon' });
    started = performance.now();
    await watched.refresh(store, { prune: true });
    const firstRead = seconds(started);
    const heapAfter = heapMb();
    started = performance.now();
    for (let i = 0; i < 10; i++) await watched.refresh(store, { prune: true });
    const steadyRefreshMs = Number(((performance.now() - started) / 10).toFixed(1));
    started = performance.now();
    let hits = 0;
    const probes = 1_000_000;
    for (let i = 0; i < probes; i++) if (watched.canonical((i % 2 ? deposits[i % deposits.length]! : wallet).toLowerCase())) hits += 1;
    const lookupNs = Math.round(((performance.now() - started) * 1e6) / probes);
    if (watched.deposits !== ADDRESSES || hits < probes / 2) throw new Error(`watched ${watched.deposits} deposit addresses, expected ${ADDRESSES}`);

    // Token traffic: PAYING transfers to deposit addresses among TRANSFERS (the others to addresses nobody watches).
    const noise = Array.from({ length: 997 }, (_, i) => getAddress(pad(numberToHex(0x10_0000 + i), { size: 20 })));
    const paying = deposits.slice(0, PAYING);
    const startBlock = await anvil.blockNumber();
    started = performance.now();
    await mintMany(anvil, { token: usdc, recipients: paying, count: PAYING, firstAmount: 1_000_000n, perTx: PER_TX });
    if (TRANSFERS > PAYING) await mintMany(anvil, { token: usdc, recipients: noise, count: TRANSFERS - PAYING, firstAmount: 1n, perTx: PER_TX });
    const head = await anvil.blockNumber();
    log(`minted ${TRANSFERS} transfers (${PAYING} to deposit addresses) in blocks ${startBlock + 1n}..${head} in ${seconds(started)} s`);

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
      backfillBlocks: Number(head - startBlock),
      pollMs: 20,
    });
    started = performance.now();
    const running = ingester.run();
    for (;;) {
      const { rows } = await store.query<{ processed_block: bigint | null }>("SELECT processed_block FROM chain_heads WHERE livemode AND chain = 'polygon'");
      if (rows[0]?.processed_block != null && rows[0].processed_block >= head) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ingestSeconds = seconds(started);
    controller.abort();
    await running;
    await rpc.close();
    const getLogs = (await metrics.rpcDuration.get()).values.find((v) => v.labels.method === 'eth_getLogs' && v.metricName?.endsWith('_count'))?.value ?? 0;
    const { rows: stored } = await store.query<{ n: number }>("SELECT count(*)::int AS n FROM transfers WHERE livemode AND chain = 'polygon'");
    if (stored[0]!.n !== PAYING) throw new Error(`expected ${PAYING} transfers to deposit addresses stored, found ${stored[0]!.n}`);

    // 3. Matching by address and evaluation.
    const engine = createEngine({ store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), config: { monitorWindowSeconds: 86_400 } });
    started = performance.now();
    await engine.reconcile({ chain: 'polygon', livemode: true });
    const matchSeconds = seconds(started);
    const { rows: matched } = await store.query<{ n: number }>("SELECT count(*)::int AS n FROM transfers WHERE match_method = 'address'");
    if (matched[0]!.n !== PAYING) throw new Error(`expected ${PAYING} transfers matched by address, found ${matched[0]!.n}`);

    return {
      watched_deposit_addresses: ADDRESSES,
      watched_set: {
        first_read_seconds: firstRead,
        heap_mb: Number((heapAfter - heapBefore).toFixed(1)),
        refresh_nothing_new_ms: steadyRefreshMs,
        lookup_ns: lookupNs,
      },
      token_transfers: TRANSFERS,
      to_deposit_addresses: PAYING,
      blocks: Number(head - startBlock),
      ingest_backfill: {
        seconds: ingestSeconds,
        token_logs_read_per_second: Math.round(TRANSFERS / ingestSeconds),
        blocks_per_second: Math.round(Number(head - startBlock) / ingestSeconds),
        eth_getLogs_requests: getLogs,
      },
      engine_match_and_evaluate: { seconds: matchSeconds, transfers_per_second: Math.round(PAYING / matchSeconds) },
    };
  } finally {
    await anvil.stop();
    await store.close();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    await stopPg();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      addresses: { type: 'string', default: '100000' },
      transfers: { type: 'string', default: '20000' },
      paying: { type: 'string', default: '2000' },
      'per-tx': { type: 'string', default: '1000' },
    },
  });
  const result = await benchDepositsIngest({
    addresses: Number(values.addresses),
    transfers: Number(values.transfers),
    paying: Number(values.paying),
    perTx: Number(values['per-tx']),
  });
  console.log(JSON.stringify(result, null, 2));
}
