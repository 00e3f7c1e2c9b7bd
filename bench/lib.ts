import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { createLogger } from '../src/internal/logger.ts';

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
