import { Writable } from 'node:stream';
import type { Address } from 'viem';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { loadConfig, type ChainName } from '../../src/internal/config.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { addWallet, createMerchant } from '../../src/accounts/index.ts';
import { createIngest, type ChainChange, type Ingest } from '../../src/ingest/index.ts';
import type { Store } from '../../src/store/index.ts';
import type { TestDatabase } from './db.ts';

/** Log lines an ingest under test wrote, parsed. */
export interface CapturedLogs {
  lines: Record<string, unknown>[];
  find(predicate: (line: Record<string, unknown>) => boolean): Record<string, unknown> | undefined;
}

export function captureLogger(level: 'info' | 'warn' | 'debug' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n')) if (text.trim()) lines.push(JSON.parse(text));
      done();
    },
  });
  const logger = createLogger({ level, destination });
  const logs: CapturedLogs = { lines, find: (predicate) => lines.find(predicate) };
  return { logger, logs };
}

export async function merchantWithWallets(store: Store, chain: ChainName, addresses: Address[]): Promise<string> {
  const { merchant } = await createMerchant(store, createSecretBox(Buffer.alloc(32, 7)), { name: 'ingest test' });
  for (const address of addresses) await addWallet(store, { merchantId: merchant.id, chain, address, verifiedBy: 'operator' });
  return merchant.id;
}

/** Starts createIngest for one chain against the given RPC URLs, with fast polling for tests. */
export function startIngest(params: { db: TestDatabase; chain: ChainName; http: string[]; ws?: string[]; backfillBlocks?: number; concurrency?: number }): {
  ingest: Ingest;
  changes: ChainChange[];
  logs: CapturedLogs;
  metrics: ReturnType<typeof createMetricsRegistry>;
} {
  const upper = params.chain.toUpperCase();
  const config = loadConfig({ [`SVC_${upper}_RPC_URL`]: params.http.join(','), [`SVC_${upper}_WS_URL`]: (params.ws ?? []).join(',') });
  const { logger, logs } = captureLogger();
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const changes: ChainChange[] = [];
  const ingest = createIngest({
    config,
    store: params.db.store,
    connectionString: params.db.connectionString,
    logger,
    metrics,
    onChainChange: (change) => void changes.push(change),
    overrides: { backfillBlocks: params.backfillBlocks ?? 0, concurrency: params.concurrency, pollMs: 100, timeoutMs: 2_000, standbyPollMs: 200 },
  });
  return { ingest, changes, logs, metrics };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function processedBlock(store: Store, chain: ChainName): Promise<bigint | undefined> {
  const { rows } = await store.query<{ processed_block: bigint | null }>('SELECT processed_block FROM chain_heads WHERE livemode AND chain = $1', [chain]);
  return rows[0]?.processed_block ?? undefined;
}

/** Waits until the ingester's checkpoint reaches `block`. */
export function waitProcessed(store: Store, chain: ChainName, block: bigint, timeoutMs = 20_000): Promise<bigint> {
  return waitFor(
    async () => {
      const processed = await processedBlock(store, chain);
      return processed !== undefined && processed >= block ? processed : undefined;
    },
    timeoutMs,
    `${chain} processed_block >= ${block}`,
  );
}

export interface TransferRow {
  tx_hash: string;
  log_index: number;
  block_number: bigint;
  block_hash: string;
  token_address: string;
  to_address: string;
  from_address: string;
  amount: string;
  status: string;
  removed_at: Date | null;
  livemode: boolean;
}

export async function transfers(store: Store, chain: ChainName): Promise<TransferRow[]> {
  const { rows } = await store.query<TransferRow>(
    'SELECT tx_hash, log_index, block_number, block_hash, token_address, to_address, from_address, amount::text, status, removed_at, livemode FROM transfers WHERE chain = $1 ORDER BY block_number, log_index',
    [chain],
  );
  return rows;
}

/** A metric's value for one label set, read from the registry's text output. */
export async function metricValue(registry: ReturnType<typeof createMetricsRegistry>, name: string, labels: Record<string, string>): Promise<number> {
  // A histogram's `_count` / `_sum` series live in the histogram's own values.
  const base = /_(count|sum)$/.test(name) && !registry.getSingleMetric(name) ? name.replace(/_(count|sum)$/, '') : name;
  const metric = await registry.getSingleMetric(base)?.get();
  const matches = metric?.values.filter(
    (value) =>
      (base === name || (value as { metricName?: string }).metricName === name) &&
      Object.entries(labels).every(([key, wanted]) => String(value.labels[key]) === wanted),
  );
  return (matches ?? []).reduce((sum, value) => sum + value.value, 0);
}
