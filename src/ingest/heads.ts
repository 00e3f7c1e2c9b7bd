import type { Sql } from '../store/index.ts';

/** One chain's listener as its leader last recorded it in `chain_heads`. */
export interface ChainHeadRecord {
  chain: string;
  headBlock: bigint | null;
  processedBlock: bigint | null;
  headSeenAt: Date | null;
  /** Whole seconds since `headSeenAt`, by the database's clock (the leader's heartbeat). */
  lagSeconds: number | null;
}

/** What `GET /status` reports of each chain's listener in one mode. */
export async function readChainHeads(sql: Sql, livemode: boolean): Promise<ChainHeadRecord[]> {
  const { rows } = await sql.query<{ chain: string; head_block: bigint | null; processed_block: bigint | null; head_seen_at: Date | null; lag: number | null }>(
    `SELECT chain, head_block, processed_block, head_seen_at, floor(extract(epoch FROM now() - head_seen_at))::int AS lag FROM chain_heads WHERE livemode = $1`,
    [livemode],
  );
  return rows.map((row) => ({
    chain: row.chain,
    headBlock: row.head_block,
    processedBlock: row.processed_block,
    headSeenAt: row.head_seen_at,
    lagSeconds: row.lag,
  }));
}
