import type { Registry } from 'prom-client';
import type { Config, ChainName } from '../internal/config.ts';
import { liveChains } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import type { Logger } from '../internal/logger.ts';
import type { Store } from '../store/index.ts';
import { ingestLockKey } from '../store/lockKeys.ts';
import type { ChainChange, OnChainChange } from './changes.ts';
import { createEvmIngester } from './evm/ingester.ts';
import { createIngestMetrics } from './metrics.ts';
import { createRpc } from './evm/rpc.ts';
import { createLeaderLocks } from './leader.ts';
import { createSolanaIngester } from './solana/index.ts';
import { superviseChain, type ChainIngestState, type ChainSupervisor } from './supervisor.ts';

export type { ChainChange, OnChainChange, ChainIngestState };

/** The ingest role of one process (see {@link createIngest}). */
export interface Ingest {
  /** Chains this process runs an ingester (or a standby) for. */
  readonly chains: ChainName[];
  status(): Record<string, ChainIngestState>;
  stop(): Promise<void>;
}

/**
 * The daemon's ingest role: one ingester per live chain (an EVM chain with at least one RPC URL;
 * solana when SVC_SOLANA_RPC_URL is set), each supervised under its chain's leader lock
 * (supervisor.ts, on one lock connection for the process): with several daemon processes, one
 * ingests each chain and the others stand by. `onChainChange` is called after every commit
 * (transfers, reorg, head, finalized) without being awaited.
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
  const locks = createLeaderLocks({ connection: { connectionString: params.connectionString }, logger });
  const names = liveChains(params.config).filter((chain) => chainConfigs[chain]?.kind === 'evm');
  const overrides = params.overrides ?? {};

  /** One EVM chain's run while this process leads it: the RPC client lives as long as the lease. */
  function superviseEvm(name: ChainName): ChainSupervisor {
    const chain = chainConfigs[name]!;
    const rpcConfig = params.config.rpc[name];
    const log = logger.child({ chain: name });
    return superviseChain({
      chain: name,
      lockKey: ingestLockKey(chain),
      locks,
      logger: log,
      metrics,
      signal: controller.signal,
      standbyPollMs: overrides.standbyPollMs,
      async lead({ lease, signal }) {
        // HTTP URLs serve requests; a WebSocket-only chain sends its requests over the socket.
        const rpc = createRpc({
          chain: name,
          urls: rpcConfig.http.length > 0 ? rpcConfig.http : rpcConfig.ws,
          logger: log,
          metrics,
          timeoutMs: overrides.timeoutMs,
          signal,
        });
        try {
          await createEvmIngester({
            chain,
            rpc,
            wsUrls: rpcConfig.ws,
            store: params.store,
            logger,
            metrics,
            onChainChange: params.onChainChange,
            signal,
            fence: lease.fence,
            backfillBlocks: overrides.backfillBlocks,
            concurrency: overrides.concurrency,
            pollMs: overrides.pollMs,
          }).run();
        } finally {
          await rpc.close();
        }
      },
    });
  }

  const evm = new Map(names.map((name) => [name, superviseEvm(name)]));
  const solana =
    params.config.rpc.solana.http.length > 0 && chainConfigs.solana
      ? createSolanaIngester({
          store: params.store,
          logger: params.logger,
          metrics: params.metrics,
          chain: chainConfigs.solana,
          rpc: params.config.rpc.solana,
          onChainChange: params.onChainChange,
          locks,
          standbyPollMs: overrides.standbyPollMs,
        })
      : undefined;
  void solana?.start();
  const chains: ChainName[] = solana ? [...names, 'solana'] : names;
  logger.info({ msg: 'Ingest started', chains });

  return {
    chains,
    status() {
      const states: Record<string, ChainIngestState> = {};
      for (const [name, supervisor] of evm) states[name] = supervisor.status();
      if (solana) states.solana = solana.status();
      return states;
    },
    async stop() {
      controller.abort('stop');
      await Promise.all([...[...evm.values()].map((supervisor) => supervisor.done), solana?.stop()]);
      await locks.close();
    },
  };
}
