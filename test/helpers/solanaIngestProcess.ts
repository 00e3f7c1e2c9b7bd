// The Solana ingester alone in a process, for the crash test: SIGKILL hits the ingester itself.
import { createSolanaIngester } from '../../src/ingest/solana/index.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createStore } from '../../src/store/index.ts';

const store = createStore({ connectionString: process.env.DATABASE_URL!, max: 6 });
const ingester = createSolanaIngester({
  store,
  logger: createLogger({ level: (process.env.LOG_LEVEL as 'error') ?? 'error' }),
  metrics: createMetricsRegistry({ defaultMetrics: false }),
  chain: loadChains().solana,
  rpc: { http: [process.env.SVC_SOLANA_RPC_URL!], ws: [] },
  pollIntervalMs: 50,
  standbyPollMs: 100,
});
await ingester.start();
process.on('SIGTERM', () => {
  void ingester
    .stop()
    .then(() => store.close())
    .then(() => process.exit(0));
});
