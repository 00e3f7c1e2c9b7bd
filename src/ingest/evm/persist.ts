import { COPY_NULL, copyText, isUniqueViolation, type Sql, type SqlWithCopy } from '../../store/index.ts';
import { RetryableError } from '../../internal/errors.ts';
import type { ObservedTransfer } from './transfers.ts';

/** A pipelined commit found the checkpoint elsewhere than where its range starts (its predecessor did not commit): nothing was written. */
export class CheckpointMovedError extends RetryableError {
  override name = 'CheckpointMovedError';
}

/** A block header as the ingester keeps it. */
export interface BlockHeader {
  number: bigint;
  hash: string;
  parentHash: string;
  timestamp: bigint;
  logsBloom: `0x${string}`;
}

/** What the ingester resumes from: its checkpoint, the chain as last seen, and the stored unfinalized blocks. */
export interface StoredState {
  processedBlock: bigint | null;
  finalizedBlock: bigint | null;
  /** number -> hash of every stored (unfinalized) block. */
  blocks: Map<bigint, string>;
}

/** Reads a chain's checkpoint and stored blocks, where a (re)started ingester resumes. */
export async function loadState(sql: Sql, chain: string): Promise<StoredState> {
  const head = await sql.query<{ processed_block: bigint | null; finalized_block: bigint | null }>(
    'SELECT processed_block, finalized_block FROM chain_heads WHERE livemode AND chain = $1',
    [chain],
  );
  const blocks = await sql.query<{ number: bigint; hash: string }>('SELECT number, hash FROM chain_blocks WHERE livemode AND chain = $1', [chain]);
  return {
    processedBlock: head.rows[0]?.processed_block ?? null,
    finalizedBlock: head.rows[0]?.finalized_block ?? null,
    blocks: new Map(blocks.rows.map((row) => [row.number, row.hash])),
  };
}

/** What one commit writes: a contiguous range of blocks [from, to] and everything found in it. */
export interface RangeCommit {
  chain: string;
  /** Set after a reorg: every transfer above `to` is marked removed first, stored blocks above it dropped, the reorg recorded. */
  rewind?: { to: bigint; depth: number; beyondRule: 'confirmed' | 'finalized' | null };
  transfers: ObservedTransfer[];
  /** Headers of the blocks in the range that are above `finalized` (hash-linked, ascending). */
  blocks: BlockHeader[];
  processedBlock: bigint;
  /**
   * Pipelined commits: the commit of the range before this one, still running in its own
   * transaction. This one writes its transfers (disjoint blocks), then waits for that commit
   * before it touches the rows they share (headers, checkpoint), and fails if it did not commit.
   */
  after?: Promise<unknown>;
  /**
   * The checkpoint this commit continues from: it moves only if the stored one is still there, so
   * a range never lands on top of a predecessor that rolled back (the gap would be skipped).
   */
  previousBlock?: bigint;
  head: bigint;
  safe: bigint | null;
  finalized: bigint | null;
}

/** SQL (in an ON CONFLICT update) that is true when the stored log differs from the incoming one. */
const CONTENT_CHANGED = `(transfers.token_address, transfers.to_address, transfers.amount) IS DISTINCT FROM (excluded.token_address, excluded.to_address, excluded.amount)`;

/** The columns a new transfer is written with, in the order of {@link transferValues}. */
const TRANSFER_INSERT = `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, from_address, to_address, amount)
     SELECT true, $1, * FROM unnest($2::text[], $3::int[], $4::int8[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[], $10::numeric[])`;

function transferValues(chain: string, t: ObservedTransfer[]): unknown[] {
  return [
    chain,
    t.map((x) => x.txHash),
    t.map((x) => x.logIndex),
    t.map((x) => x.blockNumber.toString()),
    t.map((x) => x.blockHash),
    t.map((x) => x.blockTime),
    t.map((x) => x.token),
    t.map((x) => x.from),
    t.map((x) => x.to),
    t.map((x) => x.amount.toString()),
  ];
}

/**
 * Upserts observed transfers of one chain (livemode), keyed on (tx hash, log index): a new one is
 * inserted, the same log again changes nothing, and one a reorg removed or moved is restored with
 * its new block (re-matched when its contents changed). Returns how many rows were written. Only
 * for blocks whose reorgs the ingester handles: a range it commits, or a final block.
 */
export async function upsertTransfers(sql: Sql, chain: string, transfers: ObservedTransfer[]): Promise<number> {
  if (transfers.length === 0) return 0;
  const result = await sql.query(
    `${TRANSFER_INSERT}
     ON CONFLICT (livemode, chain, tx_hash, log_index) DO UPDATE
       SET status = 'observed', removed_at = NULL, block_number = excluded.block_number, block_hash = excluded.block_hash,
           block_time = coalesce(excluded.block_time, transfers.block_time),
           -- A log index numbers logs within a block, not a transaction: a transaction re-included
           -- after a reorg at another position can bring a different log to this key. The row
           -- then takes the new log's contents and, when they changed, is matched afresh.
           token_address = excluded.token_address, from_address = excluded.from_address,
           to_address = excluded.to_address, amount = excluded.amount,
           session_id = CASE WHEN ${CONTENT_CHANGED} THEN NULL ELSE transfers.session_id END,
           match_method = CASE WHEN ${CONTENT_CHANGED} THEN NULL ELSE transfers.match_method END,
           matched_at = CASE WHEN ${CONTENT_CHANGED} THEN NULL ELSE transfers.matched_at END
           -- (migration 026's trigger puts a row with new contents back in matching's queue)
       WHERE transfers.status = 'removed' OR transfers.block_hash IS DISTINCT FROM excluded.block_hash`,
    transferValues(chain, transfers),
  );
  return result.rowCount ?? 0;
}

/** The block's columns first: consecutive transfers of one block share that part of their row. */
const TRANSFER_COPY = `COPY transfers (livemode, chain, block_number, block_hash, block_time, tx_hash, log_index, token_address, from_address, to_address, amount) FROM STDIN`;

/** Transfers as the input of {@link TRANSFER_COPY} (COPY's text format; numbers need no escaping). */
function transferRows(chain: string, transfers: ObservedTransfer[]): string {
  const livemodeAndChain = `t\t${copyText(chain)}\t`;
  // Joined once at the end: a flat string, cheaper to encode for the socket than one grown by +=.
  const rows: string[] = [];
  let blockHash: string | undefined;
  let blockPart = '';
  for (const x of transfers) {
    if (x.blockHash !== blockHash) {
      blockHash = x.blockHash;
      blockPart = `${livemodeAndChain}${x.blockNumber}\t${copyText(x.blockHash)}\t${x.blockTime ? x.blockTime.toISOString() : COPY_NULL}\t`;
    }
    rows.push(`${blockPart}${copyText(x.txHash)}\t${x.logIndex}\t${copyText(x.token)}\t${copyText(x.from)}\t${copyText(x.to)}\t${x.amount}\n`);
  }
  return rows.join('');
}

/**
 * {@link upsertTransfers} for a range the checkpoint has not covered yet, in the caller's
 * transaction: its transfers are almost always new, so they are first copied in plainly (`COPY`;
 * measured per 12,000 rows: about 100 ms of Postgres CPU against 145 for the upsert, which
 * checks for a conflict and writes a confirmation record per row, and parses ten arrays). When
 * one of them is already stored (a range re-read after a reorg, a transaction stored by a
 * lookup), the copy fails on the unique key, is rolled back to its savepoint, and the upsert runs
 * instead: the result is the upsert's either way.
 */
export async function insertNewTransfers(sql: SqlWithCopy, chain: string, transfers: ObservedTransfer[]): Promise<number> {
  if (transfers.length === 0) return 0;
  await sql.query('SAVEPOINT new_transfers');
  try {
    const copied = await sql.copyIn(TRANSFER_COPY, transferRows(chain, transfers));
    await sql.query('RELEASE SAVEPOINT new_transfers');
    return copied;
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await sql.query('ROLLBACK TO SAVEPOINT new_transfers');
    await sql.query('RELEASE SAVEPOINT new_transfers');
    return upsertTransfers(sql, chain, transfers);
  }
}

/**
 * Writes one range in the caller's transaction (rule 3): the transfers (upsert on chain, tx hash,
 * log index: re-ingesting is a no-op, and a transfer a reorg removed then re-included becomes
 * `observed` again with its new block), the unfinalized blocks, the pruning of blocks at or below
 * `finalized` (the newest stored block is kept so the next block can be linked to it) and the
 * checkpoint. Returns how many transfer rows were inserted or changed and how many were removed.
 */
export async function commitRange(sql: SqlWithCopy, commit: RangeCommit): Promise<{ written: number; removed: number }> {
  let removed = 0;
  if (commit.rewind) {
    const result = await sql.query(
      `UPDATE transfers SET status = 'removed', removed_at = now()
       WHERE livemode AND chain = $1 AND block_number > $2 AND status = 'observed'`,
      [commit.chain, commit.rewind.to],
    );
    removed = result.rowCount ?? 0;
    await sql.query('DELETE FROM chain_blocks WHERE livemode AND chain = $1 AND number > $2', [commit.chain, commit.rewind.to]);
    await sql.query('INSERT INTO chain_reorgs (livemode, chain, common_ancestor, depth, removed_transfers, beyond_rule) VALUES (true, $1, $2, $3, $4, $5)', [
      commit.chain,
      commit.rewind.to,
      commit.rewind.depth,
      removed,
      commit.rewind.beyondRule,
    ]);
  }
  // After a rewind the range re-reads blocks whose transfers are stored (marked removed): upsert.
  const written = commit.rewind ? await upsertTransfers(sql, commit.chain, commit.transfers) : await insertNewTransfers(sql, commit.chain, commit.transfers);
  if (commit.after) await commit.after;
  if (commit.blocks.length > 0) {
    const b = commit.blocks;
    await sql.query(
      `INSERT INTO chain_blocks (livemode, chain, number, hash, parent_hash, block_time)
       SELECT true, $1, * FROM unnest($2::int8[], $3::text[], $4::text[], $5::timestamptz[])
       ON CONFLICT (livemode, chain, number) DO UPDATE SET hash = excluded.hash, parent_hash = excluded.parent_hash, block_time = excluded.block_time`,
      [commit.chain, b.map((x) => x.number.toString()), b.map((x) => x.hash), b.map((x) => x.parentHash), b.map((x) => new Date(Number(x.timestamp) * 1000))],
    );
  }
  if (commit.finalized !== null) {
    await sql.query(
      `DELETE FROM chain_blocks WHERE livemode AND chain = $1 AND number <= $2
         AND number < (SELECT max(number) FROM chain_blocks WHERE livemode AND chain = $1)`,
      [commit.chain, commit.finalized],
    );
  }
  const checkpoint = await sql.query(
    `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, safe_block, finalized_block, head_seen_at, updated_at)
     VALUES (true, $1, $2, $3, $4, $5, now(), now())
     ON CONFLICT (livemode, chain) DO UPDATE SET head_block = excluded.head_block, processed_block = excluded.processed_block,
       safe_block = excluded.safe_block, finalized_block = excluded.finalized_block, head_seen_at = excluded.head_seen_at, updated_at = now()
     WHERE $6::int8 IS NULL OR chain_heads.processed_block = $6::int8`,
    [commit.chain, commit.head, commit.processedBlock, commit.safe, commit.finalized, commit.previousBlock ?? null],
  );
  if (checkpoint.rowCount === 0)
    throw new CheckpointMovedError(`${commit.chain}: the checkpoint is not at block ${commit.previousBlock}; the range is not committed`);
  return { written, removed };
}
