import type { Sql } from '../store/index.ts';

/**
 * The transactions that paid a session, for its receipt: each counted (observed) transfer's hash,
 * once, in the order they were mined, with the amount it carried (base units). Reorged-away
 * (`removed`) and failed transfers are not shown: they paid nothing.
 */
export async function sessionPaymentTransactions(sql: Sql, sessionId: string): Promise<{ txHash: string; amount: bigint; blockTime: Date | null }[]> {
  const { rows } = await sql.query<{ tx_hash: string; amount: string; block_time: Date | null }>(
    `SELECT t.tx_hash, sum(t.amount)::text AS amount, min(t.block_time) AS block_time FROM transfers t
      WHERE t.session_id = $1 AND t.status = 'observed'
      GROUP BY t.tx_hash ORDER BY min(t.block_number), t.tx_hash LIMIT 100`,
    [sessionId],
  );
  return rows.map((row) => ({ txHash: row.tx_hash, amount: BigInt(row.amount), blockTime: row.block_time }));
}
