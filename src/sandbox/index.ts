import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { sleep } from '../internal/shutdown.ts';
import { activeSandboxChains, expireUnderpaidSandboxSessions, simulatedHead, storeSimulatedHead } from './simulatedChain.ts';
import { simulatePayment, type Reconcile, type SandboxOutcome, type SimulatedPayment } from './simulatePayment.ts';

export { SANDBOX_OUTCOMES, type SandboxOutcome } from './simulatePayment.ts';
export { sandboxWallet } from './fakes.ts';

export interface Sandbox {
  /** Advances the simulated chains while sandbox payments are in flight, until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  /** One step of `run`: store the heads of busy simulated chains and reconcile them. */
  tick(): Promise<ChainName[]>;
  pay(params: { merchantId: string; sessionId: string; outcome: SandboxOutcome; amount?: string | undefined }): Promise<SimulatedPayment>;
}

/**
 * Waits after a failed tick: 250 ms, doubling up to 30 s. A tick fails when the database is down;
 * retrying every block (250 ms) would add load and a log line each time, while 30 s still
 * resumes sandbox payments soon after the database is back.
 */
export const TICK_BACKOFF = { initialMs: 250, maxMs: 30_000 } as const;

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
      const backoff = params.backoff ?? TICK_BACKOFF;
      let failures = 0;
      let failingSince = 0;
      let delay = params.blockMs;
      while (!signal.aborted) {
        try {
          await sandbox.tick();
          if (failures > 0) {
            logger.info({ msg: 'Sandbox tick recovered', failed_ticks: failures, outage_ms: Date.now() - failingSince });
            failures = 0;
          }
          delay = params.blockMs;
        } catch (error) {
          // One line per outage (the database being down would otherwise log every block), then
          // one on recovery with the count; meanwhile the loop backs off.
          if (failures === 0) {
            failingSince = Date.now();
            logger.error({ msg: 'Sandbox tick failed; retrying with backoff, logging again on recovery', err: error, retry_in_ms: backoff.initialMs });
          }
          failures++;
          delay = failures === 1 ? backoff.initialMs : Math.min(backoff.maxMs, delay * 2);
        }
        await sleep(delay, signal);
      }
    },
    pay: (request) => simulatePayment({ ...params, ...request }),
  };
  return sandbox;
}
