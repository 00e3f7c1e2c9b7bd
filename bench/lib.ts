import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../src/internal/logger.ts';
import { createApi } from '../src/api/index.ts';
import { loadConfig } from '../src/internal/config.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';

/** The p-th percentile (0..100) of an ascending array; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/**
 * The Postgres a bench measures against: DATABASE_URL when set, otherwise a throwaway embedded
 * cluster in a temporary folder (BENCH_PG_PORT, default `defaultPort`), removed by `close`.
 */
export async function benchDatabase(label: string, defaultPort: number): Promise<{ connectionString: string; close(): Promise<void> }> {
  if (process.env.DATABASE_URL) return { connectionString: process.env.DATABASE_URL, close: async () => {} };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-bench-${label}-`));
  const embedded = await startEmbeddedPostgres({ dataDir, port: Number(process.env.BENCH_PG_PORT ?? defaultPort), logger: createLogger({ level: 'warn' }) });
  return {
    connectionString: embedded.connectionString,
    async close() {
      await embedded.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A migrated store and the real API listening on a free loopback port, rate limits counted as in
 * production but set out of reach, for the HTTP benches. `config.publicUrl` is the real address.
 */
export async function benchApi(label: string, defaultPort: number) {
  const database = await benchDatabase(label, defaultPort);
  await migrate({ connectionString: database.connectionString });
  const store = createStore({ connectionString: database.connectionString });
  const box = createSecretBox(randomBytes(32));
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent' });
  const unlimited = { create: 1e9, read: 1e9, write: 1e9, ip: 1e9, publicCreate: 1e9 };
  const app = createApi({
    store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config,
    box,
    rateLimits: unlimited,
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = url;
  return {
    store,
    box,
    config,
    app,
    url,
    async close() {
      await app.close();
      await store.close();
      await database.close();
    },
  };
}
