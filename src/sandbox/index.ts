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
      while (!signal.aborted) {
        try {
          await sandbox.tick();
        } catch (error) {
          logger.error({ msg: 'Sandbox tick failed', err: error });
        }
        await sleep(params.blockMs, signal);
      }
    },
    pay: (request) => simulatePayment({ ...params, ...request }),
  };
  return sandbox;
}
