import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDelivery } from '../../src/delivery/index.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { createIngest, type Ingest } from '../../src/ingest/index.ts';
import type { ChainName, Config } from '../../src/internal/config.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Registry } from 'prom-client';
import { createLogger, type Logger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { verifyWebhook } from '../../src/receiver/verify.ts';
import type { Store } from '../../src/store/index.ts';
import { box } from './api.ts';
import { waitFor } from './waitFor.ts';

/**
 * The engine's loop and the sandbox's simulated chains feeding it, as the daemon wires them:
 * sandbox payments reach the real engine, no chain needed. `close` stops both loops.
 */
export function startSandboxEngine(params: { store: Store; logger: Logger; metrics: Registry; config?: Config; blockMs: number; intervalMs: number }) {
  const stop = new AbortController();
  const engine: Engine = createEngine({
    store: params.store,
    logger: params.logger,
    metrics: params.metrics,
    config: params.config,
    intervalMs: params.intervalMs,
  });
  const sandbox: Sandbox = createSandbox({
    store: params.store,
    logger: params.logger,
    chains: loadChains(),
    blockMs: params.blockMs,
    reconcile: async (change) => void (await engine.reconcile(change)),
  });
  const loops = [engine.run(stop.signal), sandbox.run(stop.signal)];
  return {
    engine,
    sandbox,
    async close(): Promise<void> {
      stop.abort();
      await Promise.all(loops);
    },
  };
}

/** One verified delivery as the merchant's receiver saw it. */
export interface VerifiedHook {
  event: string;
  sessionId: string;
  livemode: boolean;
}

/**
 * The daemon's live stages for end-to-end tests on anvil, wired as the daemon wires them: the
 * engine's loop, the real EVM ingester calling the engine on each commit, and (once the test has
 * registered its receiver) the webhook worker. `track` hands more loops (the sandbox's) to
 * `close`, which stops everything in the daemon's order.
 */
export function startLivePipeline(params: { store: Store; connectionString: string; config: Config }) {
  const logger: Logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const stop = new AbortController();
  const engine: Engine = createEngine({ store: params.store, logger, metrics, intervalMs: 200 });
  const ingest: Ingest = createIngest({
    config: params.config,
    store: params.store,
    connectionString: params.connectionString,
    logger,
    metrics,
    onChainChange: (change) => engine.onChainChange(change),
    overrides: { backfillBlocks: 0, pollMs: 100, timeoutMs: 2_000, standbyPollMs: 200 },
  });
  const loops: Promise<void>[] = [engine.run(stop.signal)];
  let delivery: ReturnType<typeof createDelivery> | undefined;
  return {
    logger,
    metrics,
    engine,
    signal: stop.signal,
    track(loop: Promise<void>): void {
      loops.push(loop);
    },
    /** Starts the webhook worker, then waits for the ingester's first checkpoint on `chain`. */
    async startDelivery(options: { chain: ChainName; webhookAllowPrivate: boolean }): Promise<void> {
      delivery = createDelivery({
        store: params.store,
        logger,
        metrics,
        config: { webhookAllowPrivate: options.webhookAllowPrivate, webhookAllowPrivateSandbox: true },
        box,
        pollIntervalMs: 50,
      });
      await delivery.start();
      await waitFor(
        async () =>
          (await params.store.query('SELECT 1 FROM chain_heads WHERE livemode AND chain = $1 AND processed_block IS NOT NULL', [options.chain])).rowCount === 1,
        'first checkpoint',
      );
    },
    async close(): Promise<void> {
      stop.abort();
      await Promise.all(loops);
      await delivery?.stop();
      await ingest.stop();
    },
  };
}

/**
 * The merchant's webhook receiver on loopback: verifies every delivery's signature with the
 * secret given by `useSecret` (an unverifiable one is answered 500 and not recorded) and records
 * each envelope in `received`.
 */
export async function startVerifyingReceiver() {
  let secret = '';
  const received: VerifiedHook[] = [];
  /** Every verified envelope whole (its `data`: chain, currency, amounts). */
  const envelopes: { event: string; data: Record<string, unknown> }[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', async () => {
      try {
        await verifyWebhook(body, request.headers, secret);
      } catch {
        response.writeHead(500).end();
        return;
      }
      const envelope = JSON.parse(body);
      received.push({ event: envelope.event, sessionId: envelope.data.id, livemode: envelope.livemode });
      envelopes.push({ event: envelope.event, data: envelope.data });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    envelopes,
    useSecret(value: string): void {
      secret = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
