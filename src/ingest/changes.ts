import type { ChainName } from '../internal/config.ts';

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
