import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { createFailureBackoff } from '../internal/failureBackoff.ts';
import { sleep } from '../internal/shutdown.ts';
import { activeSandboxChains, expireUnderpaidSandboxSessions, simulatedHead, storeSimulatedHead } from '../ingest/simulatedChain.ts';
import { simulatePayment, type Reconcile, type SandboxOutcome, type SimulatedPayment } from './simulatePayment.ts';
import { simulateSweep, type SimulatedSweep } from './simulateSweep.ts';

export { SANDBOX_OUTCOMES, type SandboxOutcome } from './simulatePayment.ts';

export interface Sandbox {
  /** Advances the simulated chains while sandbox payments are in flight, until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  /** One step of `run`: store the heads of busy simulated chains and reconcile them. */
  tick(): Promise<ChainName[]>;
  /**
   * Simulates one payment. `store` overrides the sandbox's own: the API passes its bounded one, so
   * a frozen database answers the request with a 503 instead of holding it.
   */
  pay(params: { merchantId: string; sessionId: string; outcome: SandboxOutcome; amount?: string | undefined; store?: Store }): Promise<SimulatedPayment>;
  /** Simulates the sweep of a confirmed address-mode session's deposit address into the merchant's wallet. */
  sweep(params: { merchantId: string; sessionId: string; store?: Store }): Promise<SimulatedSweep>;
}

/**
 * Waits after a failed tick: 250 ms, doubling up to 30 s. A tick fails when the database is down;
 * retrying every block (250 ms) would add load and a log line each time, while 30 s still
 * resumes sandbox payments soon after the database is back.
 */
const TICK_BACKOFF = { initialMs: 250, maxMs: 30_000 } as const;

/**
 * The sandbox (spec §1, §5): sessions made with test keys are paid on simulated chains that feed
 * the same `transfers` and `chain_heads` tables, the same engine and the same webhook delivery as
 * the real chains. Nothing downstream knows it is a sandbox except by `livemode = false`.
 */
export function createSandbox(params: {
  store: Store;
  logger: Logger;
  chains: Record<ChainName, ChainConfig>;
  /** Simulated block time; confirmations advance one per block. */
  blockMs: number;
  reconcile: Reconcile;
  /** Waits after failed ticks (tests shorten them); TICK_BACKOFF by default. */
  backoff?: { initialMs: number; maxMs: number };
}): Sandbox {
  const logger = params.logger.child({ stage: 'sandbox' });
  const sandbox: Sandbox = {
    async tick() {
      await expireUnderpaidSandboxSessions(params.store);
      const active = await activeSandboxChains(params.store);
      for (const chain of active) {
        await storeSimulatedHead(params.store, chain, simulatedHead(params.chains[chain], params.blockMs, Date.now()));
        await params.reconcile({ chain, livemode: false });
      }
      return active;
    },
    async run(signal) {
      const failures = createFailureBackoff({ logger, what: 'Sandbox tick', ...(params.backoff ?? TICK_BACKOFF) });
      while (!signal.aborted) {
        let delay = params.blockMs;
        try {
          await sandbox.tick();
          failures.succeeded();
        } catch (error) {
          delay = failures.failed(error);
        }
        await sleep(delay, signal);
      }
    },
    pay: ({ store, ...request }) => simulatePayment({ ...params, ...request, store: store ?? params.store }),
    sweep: ({ store, ...request }) => simulateSweep({ ...params, ...request, store: store ?? params.store }),
  };
  return sandbox;
}
