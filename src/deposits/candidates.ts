import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';

/** One token waiting at one session's deposit address: confirmed, counted, not yet swept. */
export interface UnsweptDeposit {
  sessionId: string;
  /** The merchant's wallet (the session's `pay_to`): the forwarder's destination. */
  payTo: string;
  /** The address recorded on the session (checked against the recomputed one before a sweep). */
  depositAddress: string;
  /** The token contract, as the transfers record it. */
  token: string;
  /** Sum of the confirmed transfers not yet covered by a sweep, in base units. */
  amount: bigint;
  /** When the oldest of them was observed. */
  oldest: Date;
}

/**
 * The confirmed deposits of one chain's live address-mode sessions that no sweep has covered:
 * transfers matched by address (`match_method = 'address'`, to the session's own deposit address),
 * counted (`observed`), meeting the chain's confirmation rule over the stored head (at or below
 * the finalized block, or the session's `required_confirmations` deep: as
 * ingest/confirmations.ts `isConfirmed`), with no flushed item of a sweep mined in a later block
 * for that address and token, and no sweep of it in flight. Summed per (session, token), oldest first.
 *
 * A sweep mined in the same block as a deposit does not cover it (the order inside the block is
 * not recorded): the deposit is swept again, which moves whatever is left, possibly 0.
 */
export async function unsweptDeposits(sql: Sql, chain: ChainName): Promise<UnsweptDeposit[]> {
  const { rows } = await sql.query<{ sessionId: string; payTo: string; depositAddress: string; token: string; amount: string; oldest: Date }>(
    `SELECT s.id AS "sessionId", s.pay_to AS "payTo", s.deposit_address AS "depositAddress", t.token_address AS token,
            sum(t.amount)::text AS amount, min(t.observed_at) AS oldest
       FROM transfers t
       JOIN payment_sessions s ON s.id = t.session_id
       JOIN chain_heads h ON h.livemode AND h.chain = t.chain
      WHERE t.livemode AND t.chain = $1 AND t.status = 'observed' AND t.match_method = 'address'
        AND s.livemode AND s.attribution = 'address' AND t.to_address = s.deposit_address
        AND (t.block_number <= h.finalized_block OR h.head_block - t.block_number + 1 >= s.required_confirmations)
        AND NOT EXISTS (
              SELECT 1 FROM deposit_sweep_items i JOIN deposit_sweeps w ON w.id = i.sweep_id
               WHERE i.deposit_address = s.deposit_address AND lower(i.token) = lower(t.token_address) AND w.chain = $1
                 AND ((w.status = 'mined' AND i.outcome = 'flushed' AND w.block_number > t.block_number) OR w.status = 'sent'))
      GROUP BY s.id, s.pay_to, s.deposit_address, t.token_address
      ORDER BY min(t.observed_at), s.id, t.token_address`,
    [chain],
  );
  return rows.map((row) => ({ ...row, amount: BigInt(row.amount) }));
}

/**
 * Failed flushes of these (address, token) pairs in mined sweeps since `since`: how many and the
 * last one's time, keyed `address:token` (lower case). The sweeper backs off a pair that keeps
 * failing (a token that refuses, an address that cannot be created), so it pays no gas every pass.
 */
export async function recentFailures(
  sql: Sql,
  chain: ChainName,
  pairs: readonly { depositAddress: string; token: string }[],
  since: Date,
): Promise<Map<string, { count: number; last: Date }>> {
  const failures = new Map<string, { count: number; last: Date }>();
  if (pairs.length === 0) return failures;
  const { rows } = await sql.query<{ address: string; token: string; count: number; last: Date }>(
    `SELECT lower(i.deposit_address) AS address, lower(i.token) AS token, count(*)::int AS count, max(w.updated_at) AS last
       FROM deposit_sweep_items i JOIN deposit_sweeps w ON w.id = i.sweep_id
      WHERE i.deposit_address = ANY($2) AND w.chain = $1 AND w.status = 'mined' AND i.outcome = 'failed' AND w.updated_at >= $3
      GROUP BY 1, 2`,
    [chain, [...new Set(pairs.map((pair) => pair.depositAddress))], since],
  );
  for (const row of rows) failures.set(`${row.address}:${row.token}`, { count: row.count, last: row.last });
  return failures;
}
