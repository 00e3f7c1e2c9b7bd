import type { Registry } from 'prom-client';
import type { Config, ChainName } from '../internal/config.ts';
import { liveChains } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import type { Logger } from '../internal/logger.ts';
import { NonRetryableError } from '../internal/errors.ts';
import { sleep } from '../internal/shutdown.ts';
import type { Store } from '../store/index.ts';
import { createEvmIngester, type ChainChange, type OnChainChange } from './evm/ingester.ts';
import { createLeaderLocks, LeadershipLostError } from './evm/leader.ts';
import { createIngestMetrics } from './evm/metrics.ts';
import { createRpc } from './evm/rpc.ts';
import { createSolanaIngester } from './solana/index.ts';

export type { ChainChange, OnChainChange };

/** Where each chain's ingester stands in this process. */
export type ChainIngestState =
  | { state: 'standby' }
  | { state: 'leader' }
  | { state: 'refused'; error: string }
  | { state: 'retrying'; error: string }
  | { state: 'stopped' };

/** The ingest role of one process (see {@link createIngest}). */
export interface Ingest {
  /** Chains this process runs an ingester (or a standby) for. */
  readonly chains: ChainName[];
  status(): Record<string, ChainIngestState>;
  stop(): Promise<void>;
}

/** A standby tries to take a chain's lock this often: a dead leader is replaced within about this long. */
const STANDBY_POLL_MS = 2_000;
/**
 * After a failed start-up check (wrong chain id or decimals) the chain stays off this long, its
 * lock released so a correctly configured process can lead, then checks again: an operator's
 * fix to an RPC URL's target takes effect without a restart.
 */
const REFUSED_RETRY_MS = 60_000;
/** After any other failure: 1 s doubling to 30 s. */
const RESTART_BACKOFF_BASE_MS = 1_000;
const RESTART_BACKOFF_MAX_MS = 30_000;

/**
 * Starts one ingester per live EVM chain (a chain with at least one RPC URL configured), each
 * under its chain's leader lock: with several daemon processes, one ingests each chain and the
 * others stand by. `onChainChange` is called after every commit (transfers, reorg, head,
 * finalized) without being awaited. Solana is not handled here yet.
 */
export function createIngest(params: {
  config: Config;
  store: Store;
  /** The database URL; the leader locks use a dedicated connection. */
  connectionString: string;
  logger: Logger;
  metrics: Registry;
  onChainChange: OnChainChange;
  /** Chain configurations (tests pass their own); default `chains/*.json`. */
  chains?: Partial<Record<ChainName, ChainConfig>>;
  /** Per-chain overrides, for tests and benchmarks. */
  overrides?: { backfillBlocks?: number; concurrency?: number; pollMs?: number; timeoutMs?: number; standbyPollMs?: number };
}): Ingest {
  const logger = params.logger.child({ stage: 'ingest' });
  const chainConfigs = params.chains ?? loadChains();
  const metrics = createIngestMetrics(params.metrics);
  const controller = new AbortController();
  const signal = controller.signal;
  const locks = createLeaderLocks({ connectionString: params.connectionString, logger });
  const names = liveChains(params.config).filter((chain) => chainConfigs[chain]?.kind === 'evm');
  const states: Record<string, ChainIngestState> = {};
  const overrides = params.overrides ?? {};

  async function runChain(name: ChainName) {
    const chain = chainConfigs[name]!;
    const rpcConfig = params.config.rpc[name];
    const log = logger.child({ chain: name });
    states[name] = { state: 'standby' };
    let failures = 0;
    while (!signal.aborted) {
      let lease;
      try {
        lease = await locks.tryAcquire(chain.chainId as number);
      } catch (error) {
        log.warn({ msg: 'Could not reach the database for the leader lock', err: error });
      }
      if (!lease) {
        await sleep(overrides.standbyPollMs ?? STANDBY_POLL_MS, signal);
        continue;
      }
      states[name] = { state: 'leader' };
      metrics.leader.set({ chain: name }, 1);
      log.info({ msg: 'Leading this chain: ingester starting' });
      const runSignal = AbortSignal.any([signal, lease.lost]);
      // HTTP URLs serve requests; a WebSocket-only chain sends its requests over the socket.
      const rpc = createRpc({
        chain: name,
        urls: rpcConfig.http.length > 0 ? rpcConfig.http : rpcConfig.ws,
        logger: log,
        metrics,
        timeoutMs: overrides.timeoutMs,
        signal: runSignal,
      });
      let wait = 0;
      try {
        await createEvmIngester({
          chain,
          rpc,
          wsUrls: rpcConfig.ws,
          store: params.store,
          logger,
          metrics,
          onChainChange: params.onChainChange,
          signal: runSignal,
          fence: lease.fence,
          backfillBlocks: overrides.backfillBlocks,
          concurrency: overrides.concurrency,
          pollMs: overrides.pollMs,
        }).run();
        if (lease.lost.aborted && !signal.aborted) log.warn({ msg: 'Lost the leader lock; standing by' });
      } catch (error) {
        if (signal.aborted) break;
        const message = (error as Error).message?.split('\n')[0] ?? String(error);
        if (error instanceof LeadershipLostError) {
          // No failure: another process leads now, or will once the lock is free.
          log.warn({ msg: 'Lost the leader lock; standing by', err: error });
        } else if (error instanceof NonRetryableError) {
          states[name] = { state: 'refused', error: message };
          log.error({ msg: `The ${name} ingester refuses to run: ${message}`, err: error });
          wait = REFUSED_RETRY_MS;
        } else {
          failures += 1;
          states[name] = { state: 'retrying', error: message };
          log.warn({ msg: 'Ingester stopped on an error; restarting', consecutive_failures: failures, err: error });
          wait = Math.min(RESTART_BACKOFF_MAX_MS, RESTART_BACKOFF_BASE_MS * 2 ** (failures - 1));
        }
      } finally {
        metrics.leader.set({ chain: name }, 0);
        await rpc.close();
        await lease.release();
      }
      if (states[name]?.state === 'leader') states[name] = { state: 'standby' };
      await sleep(wait, signal);
    }
    states[name] = { state: 'stopped' };
  }

  const running = names.map((name) => runChain(name).catch((error) => logger.error({ msg: 'Ingest loop crashed', chain: name, err: error })));
  // Solana: its own ingester (src/ingest/solana) under its own advisory lock, when SVC_SOLANA_RPC_URL is set.
  const solana =
    params.config.rpc.solana.http.length > 0 && chainConfigs.solana
      ? createSolanaIngester({ store: params.store, logger: params.logger, metrics: params.metrics, chain: chainConfigs.solana, rpc: params.config.rpc.solana, onChainChange: params.onChainChange })
      : undefined;
  void solana?.start();
  logger.info({ msg: 'Ingest started', chains: solana ? [...names, 'solana'] : names });

  return {
    chains: solana ? [...names, 'solana'] : names,
    status: () => (solana ? { ...states, solana: solana.status() } : { ...states }),
    async stop() {
      controller.abort('stop');
      await Promise.all([...running, solana?.stop()]);
      await locks.close();
    },
  };
}
