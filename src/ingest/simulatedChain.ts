import type { Sql } from '../store/index.ts';
import type { ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';

/**
 * The sandbox's simulated chains. A simulated chain's height is a function of time
 * (`(now - SANDBOX_GENESIS) / blockMs`), so every daemon process sharing the database agrees on
 * it without a leader, and nothing needs to tick while no sandbox payment is in flight. Blocks
 * hold nothing: the simulator writes only the head into `chain_heads` (livemode = false) and
 * the simulated transfers into `transfers`, which the real engine reads like any chain's.
 */
export const SANDBOX_GENESIS_MS = Date.UTC(2025, 0, 1);

/** Solana finalizes a slot once 31+ confirmed blocks are built on it; the sandbox uses 32. */
const SOLANA_FINALITY_DEPTH = 32;

/**
 * How far below the head a simulated block counts as finalized: twice the chain's confirmation
 * depth on EVM chains, so `confirmed` comes first and `settled` visibly later, as on mainnet.
 */
function finalityDepth(chain: ChainConfig): number {
  return typeof chain.confirmations.confirmed === 'number' ? chain.confirmations.confirmed * 2 : SOLANA_FINALITY_DEPTH;
}

export interface SimulatedHead {
  head: bigint;
  safe: bigint;
  finalized: bigint;
}

export function simulatedHead(chain: ChainConfig, blockMs: number, nowMs: number): SimulatedHead {
  const head = BigInt(Math.floor((nowMs - SANDBOX_GENESIS_MS) / blockMs));
  const confirmed = typeof chain.confirmations.confirmed === 'number' ? chain.confirmations.confirmed : SOLANA_FINALITY_DEPTH;
  return { head, safe: head - BigInt(confirmed) + 1n, finalized: head - BigInt(finalityDepth(chain)) };
}

/** Stores the simulated head; heads only move forward, whichever process writes first. */
export async function storeSimulatedHead(sql: Sql, chain: ChainName, head: SimulatedHead): Promise<void> {
  await sql.query(
    `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, safe_block, finalized_block, head_seen_at, updated_at)
     VALUES (false, $1, $2, $2, $3, $4, now(), now())
     ON CONFLICT (livemode, chain) DO UPDATE SET
       head_block = GREATEST(chain_heads.head_block, excluded.head_block),
       processed_block = GREATEST(chain_heads.processed_block, excluded.processed_block),
       safe_block = GREATEST(chain_heads.safe_block, excluded.safe_block),
       finalized_block = GREATEST(chain_heads.finalized_block, excluded.finalized_block),
       head_seen_at = now(), updated_at = now()`,
    [chain, head.head, head.safe, head.finalized],
  );
}

/**
 * Expires the sandbox sessions whose simulated `failed` outcome waits for its partial payment to
 * confirm, now that it has (status `pending`). @returns their chains, to reconcile.
 */
export async function expireUnderpaidSandboxSessions(sql: Sql): Promise<ChainName[]> {
  const { rows } = await sql.query<{ chain: ChainName }>(
    `WITH due AS (
       DELETE FROM sandbox_expire_when_pending w USING payment_sessions s
        WHERE s.id = w.session_id AND s.status IN ('pending', 'failed', 'confirmed', 'settled', 'expired')
       RETURNING s.id, s.chain, s.status
     )
     UPDATE payment_sessions p SET expires_at = LEAST(p.expires_at, now() - interval '1 millisecond'), updated_at = now()
       FROM due WHERE p.id = due.id AND due.status = 'pending'
     RETURNING p.chain`,
  );
  return rows.map((row) => row.chain);
}

/**
 * Simulated chains with work in flight: a sandbox transfer not yet below the stored finalized
 * block, or an open sandbox session past its expiry (the engine's expiry runs on reconcile).
 */
export async function activeSandboxChains(sql: Sql): Promise<ChainName[]> {
  const { rows } = await sql.query<{ chain: ChainName }>(
    `SELECT DISTINCT t.chain FROM transfers t
       LEFT JOIN chain_heads h ON h.livemode = false AND h.chain = t.chain
      WHERE t.livemode = false AND t.status = 'observed' AND (h.finalized_block IS NULL OR t.block_number > h.finalized_block)
     UNION
     SELECT DISTINCT chain FROM payment_sessions
      WHERE livemode = false AND status IN ('created', 'pending', 'confirming') AND expires_at <= now()
     UNION
     SELECT DISTINCT s.chain FROM sandbox_expire_when_pending w JOIN payment_sessions s ON s.id = w.session_id`,
  );
  return rows.map((row) => row.chain);
}
