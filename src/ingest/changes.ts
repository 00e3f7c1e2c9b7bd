import type { ChainName } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';

/**
 * What changed on a chain, told to the engine after each commit: `transfers` (new or restored
 * rows), `reorg` (transfers removed: an EVM reorg, a Solana transaction that vanished before
 * finalization), `head` (the head moved), `finalized` (the finalized block or slot moved). The
 * engine re-reads the tables, so a lost call only delays it.
 */
export interface ChainChange {
  chain: ChainName;
  livemode: true;
  kind: 'transfers' | 'reorg' | 'head' | 'finalized';
}

/** Called after each commit; errors are logged, never thrown into the ingester. */
export type OnChainChange = (change: ChainChange) => void | Promise<void>;

/**
 * Tells `change` without waiting for it (the EVM ingester's commits must not wait on the engine):
 * a throw or a rejection is logged, never thrown into the ingester.
 */
export function tellChange(onChainChange: OnChainChange, change: ChainChange, logger: Pick<Logger, 'error'>): void {
  try {
    void Promise.resolve(onChainChange(change)).catch((error) => logger.error({ msg: 'onChainChange failed', kind: change.kind, err: error }));
  } catch (error) {
    logger.error({ msg: 'onChainChange failed', kind: change.kind, err: error });
  }
}
