import type { ChainConfig } from '../internal/chains.ts';
import type { Sql } from '../store/index.ts';

/** A chain's head as the ingester last stored it (chain_heads); nulls until first seen. */
export interface ChainHead {
  headBlock: bigint | null;
  finalizedBlock: bigint | null;
}

/** The stored head of one (livemode, chain); nulls when the ingester has not written one yet. */
export async function readChainHead(sql: Sql, params: { livemode: boolean; chain: string }): Promise<ChainHead> {
  const { rows } = await sql.query<{ head_block: bigint | null; finalized_block: bigint | null }>(
    'SELECT head_block, finalized_block FROM chain_heads WHERE livemode = $1 AND chain = $2',
    [params.livemode, params.chain],
  );
  return { headBlock: rows[0]?.head_block ?? null, finalizedBlock: rows[0]?.finalized_block ?? null };
}

/** Live confirmations of a transfer in `block`: head - block + 1, never below 0. */
export function confirmationsOf(head: ChainHead, block: bigint): number {
  if (head.headBlock === null || head.headBlock < block) return 0;
  return Number(head.headBlock - block + 1n);
}

/** At or below the chain's finalized block (EVM `finalized` tag, solana `finalized` commitment). */
export function isSettled(head: ChainHead, block: bigint): boolean {
  return head.finalizedBlock !== null && block <= head.finalizedBlock;
}

/**
 * The chain's confirmation rule (chains/<chain>.json): on EVM chains `required` blocks deep
 * (the session's `required_confirmations`, fixed when it was created) or finalized; on solana
 * only finalized, since `confirmed` commitment is detection, not confirmation.
 */
export function isConfirmed(chain: ChainConfig, head: ChainHead, block: bigint, required: number): boolean {
  if (isSettled(head, block)) return true;
  if (chain.kind === 'solana') return false;
  return confirmationsOf(head, block) >= required;
}
