import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';

/**
 * The `deposit_sweeps` and `deposit_sweep_items` rows (migration 036): one per sweep transaction,
 * one item per (deposit address, token) it covers. SQL as small functions; money as bigint.
 */
export type SweepStatus = 'sent' | 'mined' | 'reverted' | 'dropped';
export type ItemOutcome = 'pending' | 'flushed' | 'failed';

/** The zero address: a sweep item's token when it is the native coin. */
export const NATIVE_TOKEN = '0x0000000000000000000000000000000000000000';

export interface SweepItem {
  position: number;
  token: string;
  sessionId: string | null;
  depositAddress: string;
  destination: string;
  salt: string;
  outcome: ItemOutcome;
  amount: bigint | null;
}

export interface SweepRecord {
  id: string;
  chain: ChainName;
  livemode: boolean;
  sender: string;
  nonce: number;
  txHash: string;
  rawTx: string;
  status: SweepStatus;
  blockNumber: bigint | null;
  blockHash: string | null;
  gasUsed: bigint | null;
  gasPrice: bigint | null;
  error: string | null;
  items: SweepItem[];
}

const SWEEP_COLUMNS = `id, chain, livemode, sender, nonce::int AS nonce, tx_hash AS "txHash", raw_tx AS "rawTx", status,
  block_number::text AS "blockNumber", block_hash AS "blockHash", gas_used::text AS "gasUsed", gas_price::text AS "gasPrice", error`;

const big = (value: unknown) => (value === null || value === undefined ? null : BigInt(value as string));

async function withItems(sql: Sql, rows: Record<string, unknown>[]): Promise<SweepRecord[]> {
  if (rows.length === 0) return [];
  const { rows: items } = await sql.query(
    `SELECT sweep_id, position, token, session_id AS "sessionId", deposit_address AS "depositAddress", destination, salt, outcome, amount::text AS amount
       FROM deposit_sweep_items WHERE sweep_id = ANY($1) ORDER BY sweep_id, position, token`,
    [rows.map((row) => row.id)],
  );
  return rows.map((row) => ({
    ...(row as unknown as SweepRecord),
    blockNumber: big(row.blockNumber),
    gasUsed: big(row.gasUsed),
    gasPrice: big(row.gasPrice),
    items: items
      .filter((item) => item.sweep_id === row.id)
      .map(({ sweep_id: _, ...item }) => ({ ...(item as unknown as SweepItem), amount: big(item.amount) })),
  }));
}

/** Records a signed sweep before it is broadcast (`sent`), with its items (`pending`). */
export async function insertSweep(
  sql: Sql,
  sweep: { id: string; chain: ChainName; livemode: boolean; sender: string; nonce: number; txHash: string; rawTx: string },
  items: Omit<SweepItem, 'outcome' | 'amount'>[],
): Promise<void> {
  await sql.query(`INSERT INTO deposit_sweeps (id, chain, livemode, sender, nonce, tx_hash, raw_tx, status) VALUES ($1, $2, $3, $4, $5, $6, $7, 'sent')`, [
    sweep.id,
    sweep.chain,
    sweep.livemode,
    sweep.sender.toLowerCase(),
    sweep.nonce,
    sweep.txHash,
    sweep.rawTx,
  ]);
  await sql.query(
    `INSERT INTO deposit_sweep_items (sweep_id, position, token, session_id, deposit_address, destination, salt, outcome)
     SELECT $1, position, token, session_id, deposit_address, destination, salt, 'pending'
       FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS i(position, token, session_id, deposit_address, destination, salt)`,
    [
      sweep.id,
      items.map((item) => item.position),
      items.map((item) => item.token),
      items.map((item) => item.sessionId),
      items.map((item) => item.depositAddress),
      items.map((item) => item.destination),
      items.map((item) => item.salt),
    ],
  );
}

export async function getSweep(sql: Sql, id: string): Promise<SweepRecord | undefined> {
  const { rows } = await sql.query(`SELECT ${SWEEP_COLUMNS} FROM deposit_sweeps WHERE id = $1`, [id]);
  return (await withItems(sql, rows))[0];
}

/** The chain's sweeps that are recorded but not resolved (`sent`), oldest first. */
export async function sweepsInFlight(sql: Sql, chain: ChainName): Promise<SweepRecord[]> {
  const { rows } = await sql.query(`SELECT ${SWEEP_COLUMNS} FROM deposit_sweeps WHERE chain = $1 AND status = 'sent' ORDER BY created_at`, [chain]);
  return withItems(sql, rows);
}

/** The chain's mined or reverted sweeps at or above `fromBlock`: a reorg may still undo them. */
export async function sweepsSince(sql: Sql, chain: ChainName, fromBlock: bigint): Promise<SweepRecord[]> {
  const { rows } = await sql.query(
    `SELECT ${SWEEP_COLUMNS} FROM deposit_sweeps WHERE chain = $1 AND status IN ('mined', 'reverted') AND block_number >= $2 ORDER BY block_number`,
    [chain, fromBlock.toString()],
  );
  return withItems(sql, rows);
}

/**
 * Records a sweep's receipt: `mined` (with each item's outcome and amount) or `reverted` (every
 * item failed). Only from `sent` (or, for a reorg that moved it to another block, `mined`).
 * @returns whether the row changed.
 */
export async function markMined(
  sql: Sql,
  id: string,
  receipt: { status: 'mined' | 'reverted'; blockNumber: bigint; blockHash: string; gasUsed: bigint; gasPrice: bigint },
  outcomes: { position: number; token: string; outcome: Exclude<ItemOutcome, 'pending'>; amount: bigint | null }[],
): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE deposit_sweeps SET status = $2, block_number = $3, block_hash = $4, gas_used = $5, gas_price = $6, error = NULL, updated_at = now()
      WHERE id = $1 AND status IN ('sent', 'mined', 'reverted')`,
    [id, receipt.status, receipt.blockNumber.toString(), receipt.blockHash, receipt.gasUsed.toString(), receipt.gasPrice.toString()],
  );
  if (!rowCount) return false;
  await sql.query(
    `UPDATE deposit_sweep_items d SET outcome = o.outcome, amount = o.amount::numeric
       FROM unnest($2::int[], $3::text[], $4::text[], $5::text[]) AS o(position, token, outcome, amount)
      WHERE d.sweep_id = $1 AND d.position = o.position AND d.token = o.token`,
    [
      id,
      outcomes.map((o) => o.position),
      outcomes.map((o) => o.token),
      outcomes.map((o) => o.outcome),
      outcomes.map((o) => (o.amount === null ? null : o.amount.toString())),
    ],
  );
  return true;
}

/** A mined sweep whose block a reorg removed: back to `sent` (to be rebroadcast), its items `pending`. */
export async function markUnmined(sql: Sql, id: string): Promise<void> {
  await sql.query(
    `UPDATE deposit_sweeps SET status = 'sent', block_number = NULL, block_hash = NULL, gas_used = NULL, gas_price = NULL, updated_at = now()
      WHERE id = $1 AND status IN ('mined', 'reverted')`,
    [id],
  );
  await sql.query(`UPDATE deposit_sweep_items SET outcome = 'pending', amount = NULL WHERE sweep_id = $1`, [id]);
}

/** A `sent` sweep whose nonce another transaction used: it will never be mined; its items fail. */
export async function markDropped(sql: Sql, id: string, error: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE deposit_sweeps SET status = 'dropped', error = $2, updated_at = now() WHERE id = $1 AND status = 'sent'`, [
    id,
    error,
  ]);
  if (rowCount) await sql.query(`UPDATE deposit_sweep_items SET outcome = 'failed' WHERE sweep_id = $1`, [id]);
  return Boolean(rowCount);
}
