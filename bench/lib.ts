import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Pool as UndiciPool } from 'undici';
import { createLogger } from '../src/internal/logger.ts';
import { createApi } from '../src/api/index.ts';
import { loadConfig } from '../src/internal/config.ts';
import { createSecretBox, type SecretBox } from '../src/internal/crypto.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createStore, type Store } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';

/** The p-th percentile (0..100) of an ascending array; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/**
 * The Postgres a bench measures against: DATABASE_URL when set, otherwise a throwaway embedded
 * cluster in a temporary folder (BENCH_PG_PORT, default `defaultPort`), removed by `close`. With
 * `statements`, the embedded cluster is restarted once with pg_stat_statements loaded (see
 * {@link createStatementStats}).
 */
export async function benchDatabase(
  label: string,
  defaultPort: number,
  options: { statements?: boolean } = {},
): Promise<{ connectionString: string; close(): Promise<void> }> {
  if (process.env.DATABASE_URL) return { connectionString: process.env.DATABASE_URL, close: async () => {} };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-bench-${label}-`));
  const start = () => startEmbeddedPostgres({ dataDir, port: Number(process.env.BENCH_PG_PORT ?? defaultPort), logger: createLogger({ level: 'warn' }) });
  let embedded = await start();
  if (options.statements) {
    const client = new pg.Client({ connectionString: embedded.connectionString });
    await client.connect();
    await client.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await client.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
    await client.end();
    await embedded.stop();
    embedded = await start();
  }
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
  const served = await listenBenchApi({ store, box, env: {} });
  return {
    store,
    box,
    ...served,
    async close() {
      await served.app.close();
      await store.close();
      await database.close();
    },
  };
}

/**
 * The real API on `store`, built as the daemon builds it and listening on a free loopback port:
 * rate limits counted as in production but set out of the benches' reach; `env` adds to the
 * configuration. `config.publicUrl` is the real address.
 */
export async function listenBenchApi(params: { store: Store; box: SecretBox; env: Record<string, string> }) {
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', ...params.env });
  const unlimited = { create: 1e9, read: 1e9, write: 1e9, ip: 1e9, publicCreate: 1e9 };
  const app = createApi({
    store: params.store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config,
    box: params.box,
    rateLimits: unlimited,
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = url;
  return { app, config, url };
}

/** One request of a load run: what to send and the status that counts as success. */
export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What a load run measured. Latencies are in milliseconds, ascending. */
export interface LoadResult {
  label: string;
  requests: number;
  seconds: number;
  perSecond: number;
  errors: number;
  latencies: number[];
  /** Bodies of the first successful answers (up to `keepBodies`), for later reads. */
  bodies: string[];
}

async function send(pool: UndiciPool, spec: LoadRequest): Promise<{ status: number; text: string }> {
  const response = await pool.request({
    method: spec.method,
    path: spec.path,
    headers: { ...(spec.body !== undefined ? { 'content-type': 'application/json' } : {}), ...spec.headers },
    ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
  });
  return { status: response.statusCode, text: await response.body.text() };
}

function summary(label: string, seconds: number, latencies: number[], errors: number, bodies: string[]): LoadResult {
  latencies.sort((a, b) => a - b);
  return { label, requests: latencies.length, seconds, perSecond: latencies.length / seconds, errors, latencies, bodies };
}

/**
 * Closed loop: `connections` keep-alive connections, each sending its next request as soon as
 * the previous answer is read, for `seconds`. Measures throughput; every answer counts, an
 * unexpected status as an error. The same generator drives every server a bench compares.
 */
export async function closedLoop(params: {
  origin: string;
  label: string;
  connections: number;
  seconds: number;
  expected: number;
  request: (i: number) => LoadRequest;
  keepBodies?: number;
}): Promise<LoadResult> {
  const pool = new UndiciPool(params.origin, { connections: params.connections, pipelining: 1 });
  const latencies: number[] = [];
  const bodies: string[] = [];
  let errors = 0;
  let counter = 0;
  const started = performance.now();
  const deadline = started + params.seconds * 1000;
  await Promise.all(
    Array.from({ length: params.connections }, async () => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        const answer = await send(pool, params.request(counter++)).catch(() => ({ status: 0, text: '' }));
        latencies.push(performance.now() - sent);
        if (answer.status !== params.expected) errors++;
        else if (bodies.length < (params.keepBodies ?? 0)) bodies.push(answer.text);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return summary(params.label, seconds, latencies, errors, bodies);
}

/**
 * Open loop: requests sent on a fixed schedule (`rate` per second for `seconds`) whatever the
 * server's answers, over up to `connections` connections. Each latency runs from the request's
 * scheduled time, not its actual send, so a server that falls behind shows it in the
 * percentiles (no coordinated omission).
 */
export async function openLoop(params: {
  origin: string;
  label: string;
  rate: number;
  seconds: number;
  connections: number;
  expected: number;
  request: (i: number) => LoadRequest;
}): Promise<LoadResult> {
  const pool = new UndiciPool(params.origin, { connections: params.connections, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const total = Math.round(params.rate * params.seconds);
  const started = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; ) {
    const now = performance.now();
    // Every request due by now goes out; the timer below wakes at the next millisecond.
    for (; i < total && started + (i * 1000) / params.rate <= now; i++) {
      const scheduled = started + (i * 1000) / params.rate;
      inFlight.push(
        send(pool, params.request(i)).then(
          (answer) => {
            latencies.push(performance.now() - scheduled);
            if (answer.status !== params.expected) errors++;
          },
          () => {
            latencies.push(performance.now() - scheduled);
            errors++;
          },
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return summary(params.label, seconds, latencies, errors, []);
}

/** One line of a bench's table: rate, p50, p99 and errors, plus `extra` (a ratio). */
export function formatResult(result: LoadResult, extra = ''): string {
  return `${result.label.padEnd(52)} ${result.perSecond.toFixed(0).padStart(6)} req/s   p50 ${percentile(result.latencies, 50).toFixed(1).padStart(6)} ms   p99 ${percentile(result.latencies, 99).toFixed(1).padStart(6)} ms   errors ${result.errors}${extra}`;
}
