import type PgBoss from 'pg-boss';
import type { FastifyInstance } from 'fastify';
import type { Config } from './internal/config.ts';
import type { Logger } from './internal/logger.ts';
import { createShutdown, type Shutdown } from './internal/shutdown.ts';
import { createMetricsRegistry, serveMetrics } from './internal/metrics.ts';
import { createSecretBox, loadOrCreateEncryptionKey } from './internal/crypto.ts';
import { createStore, type Store } from './store/index.ts';
import { connectDatabase } from './store/connect.ts';
import { migrate } from './store/migrate.ts';
import type { createIngest } from './ingest/index.ts';
import type { Sandbox } from './sandbox/index.ts';
import { createEngine } from './engine/index.ts';
import { loadChains } from './internal/chains.ts';
import { bootstrapFirstMerchant, type BootstrapResult } from './bootstrap.ts';
import { createReadiness, healthResponse, readyResponse, registerReadyRoute, type Readiness } from './readiness.ts';

// Each role's stages are imported only when this process runs that role (issue 28): the compiled
// dist/ puts them in chunks of their own (scripts/build.mjs), so an ingest-only process never
// loads fastify, typebox or the dashboard, and an api-only one never loads pg-boss. Each import
// starts at once, beside the database work below, and is awaited where the role is built; with the
// api role, the worker's and the ingesters' start once the API listens (see startDaemon).
const loadApi = () => Promise.all([import('./http.ts'), import('./x402/index.ts')]);
const loadWorker = () => Promise.all([import('pg-boss'), import('./delivery/index.ts'), import('./deposits/sweeper.ts'), import('./store/retention.ts')]);
const loadIngest = () => import('./ingest/index.ts');

export const ROLES = ['api', 'ingest', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** pg-boss keeps its tables in this schema, apart from ours. */
const PG_BOSS_SCHEMA = 'pgboss';

/** The pg-boss queue of the hourly retention pass (store/retention.ts). */
const RETENTION_QUEUE = 'maintenance.retention';

export interface Daemon {
  store: Store;
  shutdown: Shutdown;
  /** The HTTP server's address when the api role runs. */
  url: string | undefined;
  /** Set on the very first start of an empty database: the merchant and test key made for it. */
  bootstrap: BootstrapResult | undefined;
  api: FastifyInstance | undefined;
  boss: PgBoss | undefined;
  /** What `/ready` answers (API port, and the metrics port when SVC_METRICS_PORT is set). */
  readiness: Readiness;
  /** The metrics listener's address (`/metrics`, `/ready`, `/health`) when SVC_METRICS_PORT is set. */
  metricsUrl: string | undefined;
}

/**
 * Starts the daemon's roles in one process: `api` (HTTP), `ingest` (chain watchers) and
 * `worker` (engine and webhook jobs). Any subset can run per process; several processes can
 * share one database (see docs/architecture.md, rule 8).
 */
export async function startDaemon(params: {
  config: Config;
  logger: Logger;
  roles: readonly Role[];
  /**
   * Called as soon as the first start of an empty database has created its merchant and test key,
   * before anything else can fail: a start that fails later (a port in use) must still show them,
   * since the next start finds a merchant and creates none.
   */
  onBootstrap?: (bootstrap: BootstrapResult) => void;
}): Promise<Daemon> {
  const { config, logger, roles } = params;
  const shutdown = createShutdown({ onError: (name, error) => logger.error({ msg: 'Error while shutting down', part: name, err: error }) });
  const startedAt = new Date();
  // A role's modules load while the database connects and migrations are checked. With the api
  // role, the others' load after the API listens: JavaScript runs on one thread, and loading them
  // first put their CPU (pg-boss, undici, the ingesters) before the API's first answer (issue 28).
  const apiFirst = roles.includes('api');
  const modules = {
    api: roles.includes('api') ? loadApi() : undefined,
    worker: roles.includes('worker') && !apiFirst ? loadWorker() : undefined,
    ingest: roles.includes('ingest') && !apiFirst ? loadIngest() : undefined,
    sandbox: roles.includes('api') || roles.includes('ingest') ? import('./sandbox/index.ts') : undefined,
  };
  // An import that fails while start-up fails elsewhere must not surface as an unhandled rejection.
  for (const loading of Object.values(modules)) loading?.catch(() => {});
  try {
    const database = await connectDatabase(config, logger);
    shutdown.add('database', database.stop);

    const applied = await migrate({ connectionString: database.connectionString });
    if (applied.length > 0) logger.info({ msg: 'Applied migrations', versions: applied });

    const store = createStore({ connectionString: database.connectionString });
    shutdown.add('store', () => store.close());
    const box = createSecretBox(loadOrCreateEncryptionKey({ configured: config.encryptionKey, dataDir: config.dataDir }));
    const bootstrap = await bootstrapFirstMerchant(store, box);
    if (bootstrap) params.onBootstrap?.(bootstrap);
    const metrics = createMetricsRegistry();
    // The engine is rules over rows: the worker runs its periodic pass (expiry, safety net), the
    // ingest role calls it after each commit; several processes may run it at once.
    const engine = createEngine({ store, logger, metrics, config });
    shutdown.add('engine', () => engine.idle());
    // The sandbox's simulated chains feed the same tables and engine; the api role uses it for
    // simulated payments, the ingest role advances the simulated chains (a worker-only process has none).
    const sandbox = (await modules.sandbox)?.createSandbox({
      store,
      logger,
      chains: loadChains(),
      blockMs: config.sandboxBlockMs,
      reconcile: async (change) => void (await engine.reconcile(change)),
    });

    // Readiness per role (src/readiness.ts); liveness stays /health. The roles start side by side
    // (issue 28): /health answers once the API (or the metrics port) listens, without waiting for
    // the worker's pg-boss start or the ingesters, and /ready says not ready until every role has
    // started.
    const starting = new Set<Role>(roles);
    let ingest: ReturnType<typeof createIngest> | undefined;
    const readiness = createReadiness({
      store,
      roles,
      starting: () => [...starting],
      ...(modules.ingest ? { ingestStatus: () => ingest?.status() ?? {} } : {}),
    });
    let metricsUrl: string | undefined;
    if (config.metricsPort !== undefined) {
      const routes = { '/ready': () => readyResponse(readiness), '/health': () => healthResponse(store, startedAt) };
      const metricsServer = await serveMetrics({ registry: metrics, host: config.host, port: config.metricsPort, routes, timeouts: config.httpTimeouts });
      shutdown.add('metrics', () => metricsServer.close());
      metricsUrl = metricsServer.url;
      logger.info({ msg: 'Metrics listening', url: `${metricsServer.url}/metrics` });
    }

    let boss: PgBoss | undefined;
    const startWorker = async (loading: ReturnType<typeof loadWorker>) => {
      const [{ default: PgBoss }, { createDelivery }, { createSweeper }, { pruneExpiredRows }] = await loading;
      boss = new PgBoss({ connectionString: database.connectionString, schema: PG_BOSS_SCHEMA, application_name: 'svc-worker', max: 4 });
      boss.on('error', (error) => logger.error({ msg: 'pg-boss error', err: error }));
      const started = boss;
      await started.start();
      // graceful: active jobs finish (up to 30 s) before the pool closes.
      shutdown.add('worker', () => started.stop({ graceful: true, wait: true, timeout: 30_000 }));
      // Retention runs hourly as a pg-boss cron job: pg-boss fires each schedule once across all
      // worker processes, and a missed run (all workers down) simply happens at the next hour.
      await started.createQueue(RETENTION_QUEUE);
      await started.schedule(RETENTION_QUEUE, '17 * * * *');
      await started.work(RETENTION_QUEUE, async () => {
        const deleted = await pruneExpiredRows(store);
        logger.info({ msg: 'Retention pass', deleted });
      });
      // Webhook delivery: outbox -> signed POSTs, retries as rows; stops (attempts in flight finish) before pg-boss.
      const delivery = createDelivery({ store, logger, metrics, config, box });
      await delivery.start();
      shutdown.add('delivery', () => delivery.stop());
      const engineLoop = engine.run(shutdown.signal);
      shutdown.add('engine-loop', () => engineLoop);
      // Deposit sweeps (address mode) with the gas-only relayer keys, on chains that have one and an RPC URL.
      if (config.sweeper.enabled) {
        const sweeper = createSweeper({ store, logger, metrics, config });
        const sweeperLoop = sweeper.run(shutdown.signal);
        shutdown.add('deposit-sweeper', () => sweeperLoop);
      }
    };

    const startIngest = async (loading: ReturnType<typeof loadIngest>, simulated: Sandbox) => {
      const { createIngest } = await loading;
      // onChainChange is called after each ingest commit: the engine reconciles that chain.
      const started = createIngest({
        config,
        store,
        connectionString: database.connectionString,
        logger,
        metrics,
        onChainChange: (change) => engine.onChainChange(change),
      });
      ingest = started;
      shutdown.add('ingest', () => started.stop());
      logger.info({ msg: 'Ingest role started', live_chains: started.chains });
      const sandboxLoop = simulated.run(shutdown.signal);
      shutdown.add('sandbox', () => sandboxLoop);
    };

    let api: FastifyInstance | undefined;
    let url: string | undefined;
    let x402Watch: Promise<void> | undefined;
    const startApi = async (loading: NonNullable<typeof modules.api>, simulated: Sandbox) => {
      const [{ createHttp }, { createX402 }] = await loading;
      // x402 settles with gas-only relayer keys (SVC_<CHAIN>_RELAYER_KEY) on the chains that have one.
      const x402 = createX402({ store, logger, metrics, config, sandbox: simulated });
      x402Watch = x402.watch(shutdown.signal);
      const server = createHttp({ store, logger, metrics, config, box, sandbox: simulated, x402 });
      api = server;
      registerReadyRoute(server, readiness);
      url = await server.listen({ port: config.port, host: config.host });
      // With PORT=0 and no SVC_PUBLIC_URL, links must carry the port actually bound.
      if (config.publicUrlIsDefault) config.publicUrl = url;
      logger.info({ msg: 'API listening', url, public_url: config.publicUrl });
    };

    const role = async (name: Role, run: (() => Promise<void>) | undefined) => {
      if (!run) return;
      await run();
      starting.delete(name);
    };
    const apiStarted = role('api', modules.api && sandbox && (() => startApi(modules.api!, sandbox)));
    // The other roles start beside each other, after the API listens when there is one (and not
    // at all when it fails). Every start is awaited, failed or not, before a failure stops the
    // process: shutdown must not run while a role is still adding what it has to close.
    const after = apiFirst ? apiStarted : Promise.resolve();
    const outcomes = await Promise.allSettled([
      apiStarted,
      after.then(() => role('worker', roles.includes('worker') ? () => startWorker(modules.worker ?? loadWorker()) : undefined)),
      after.then(() => role('ingest', roles.includes('ingest') && sandbox ? () => startIngest(modules.ingest ?? loadIngest(), sandbox) : undefined)),
    ]);
    // Registered after the other roles' (callbacks run in reverse): the HTTP server drains before
    // the workers stop, as when it started last; also when a start failed, so that it is closed.
    if (x402Watch) {
      const watching = x402Watch;
      shutdown.add('x402', () => watching);
    }
    if (api) {
      const server = api;
      shutdown.add('api', () => server.close());
    }
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;

    return { store, shutdown, url, bootstrap, api, boss, readiness, metricsUrl };
  } catch (error) {
    await shutdown.kill('start-up failed');
    throw error;
  }
}
