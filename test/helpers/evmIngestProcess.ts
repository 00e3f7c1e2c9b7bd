/**
 * A real ingest process for the crash and leader tests: createIngest for the chains whose RPC
 * variables are set, on DATABASE_URL, until SIGTERM (or until a SIGKILL, which is the point).
 * INGEST_RANGE=a,b overrides the chain's eth_getLogs initial and max range, so a small backfill
 * still commits many checkpoints.
 */
import { createIngest } from '../../src/ingest/index.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createStore } from '../../src/store/index.ts';

const connectionString = process.env.DATABASE_URL!;
const config = loadConfig(process.env);
const chains = structuredClone(loadChains());
if (process.env.INGEST_RANGE) {
  const [initialRange, maxRange] = process.env.INGEST_RANGE.split(',').map(Number);
  for (const chain of Object.values(chains)) if (chain.logs) chain.logs = { ...chain.logs, initialRange: initialRange!, maxRange: maxRange! };
}
const store = createStore({ connectionString, max: 4 });
const ingest = createIngest({
  config,
  store,
  connectionString,
  logger: createLogger({ level: (process.env.LOG_LEVEL as 'info') ?? 'warn' }),
  metrics: createMetricsRegistry({ defaultMetrics: false }),
  chains,
  onChainChange: () => {},
  overrides: { backfillBlocks: Number(process.env.INGEST_BACKFILL_BLOCKS ?? 100_000), pollMs: 100, standbyPollMs: 250, timeoutMs: 2_000 },
});
process.stdout.write(`ready ${process.pid}\n`);
process.on('SIGTERM', async () => {
  await ingest.stop();
  await store.close();
  process.exit(0);
});
