import type { Sql } from '../../store/index.ts';
import type { TokenCredit } from './parse.ts';

/** A signature as stored in solana_signatures. */
export interface StoredSignature {
  signature: string;
  slot: bigint;
  commitment: 'confirmed' | 'finalized' | 'removed';
  accountIndex: number | null;
}

/** Signatures of `tokenAccount` that are in `signatures` or still waiting for finalization. */
export async function loadKnownSignatures(sql: Sql, tokenAccount: string, signatures: string[]): Promise<Map<string, StoredSignature>> {
  const { rows } = await sql.query<{ signature: string; slot: bigint; commitment: StoredSignature['commitment']; account_index: number | null }>(
    `SELECT signature, slot, commitment, account_index FROM solana_signatures
     WHERE token_account = $1 AND (signature = ANY($2::text[]) OR commitment = 'confirmed')`,
    [tokenAccount, signatures],
  );
  return new Map(rows.map((row) => [row.signature, { signature: row.signature, slot: row.slot, commitment: row.commitment, accountIndex: row.account_index }]));
}

/** One signature to record: what the transaction did to the token account, at which commitment. */
export interface SignatureRecord {
  signature: string;
  slot: bigint;
  finalized: boolean;
  failed: boolean;
  blockTime: Date | null;
  credit: TokenCredit | undefined;
}

/**
 * Records signatures of one token account and their credits as transfers, two statements per
 * batch whatever its size (rows travel as one jsonb array). A transfer that a fork switch had
 * removed and that lands again is restored (status back to observed, new slot).
 * @returns how many transfers were inserted or restored.
 */
export async function recordSignatures(sql: Sql, tokenAccount: string, owner: string, records: SignatureRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  await sql.query(
    `INSERT INTO solana_signatures (token_account, signature, slot, commitment, failed, account_index, block_time)
     SELECT $1, r.signature, r.slot, r.commitment, r.failed, r.account_index, r.block_time
     FROM jsonb_to_recordset($2::jsonb) AS r (signature text, slot bigint, commitment text, failed boolean, account_index integer, block_time timestamptz)
     ON CONFLICT (token_account, signature) DO UPDATE
       SET slot = EXCLUDED.slot, commitment = EXCLUDED.commitment, failed = EXCLUDED.failed,
           account_index = EXCLUDED.account_index, updated_at = now()
       WHERE solana_signatures.commitment <> 'finalized'`,
    [
      tokenAccount,
      JSON.stringify(
        records.map((record) => ({
          signature: record.signature,
          slot: record.slot.toString(),
          commitment: record.finalized ? 'finalized' : 'confirmed',
          failed: record.failed,
          account_index: record.credit?.accountIndex ?? null,
          block_time: record.blockTime?.toISOString() ?? null,
        })),
      ),
    ],
  );
  const credits = records.flatMap((record) => (record.credit ? [record.credit] : []));
  if (credits.length === 0) return 0;
  const { rowCount } = await sql.query(
    `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_time, token_address, from_address, to_address, amount, reference_keys, status)
     SELECT true, 'solana', r.tx_hash, r.log_index, r.block_number, r.block_time, r.token_address, r.from_address, r.to_address, r.amount, r.reference_keys, r.status
     FROM jsonb_to_recordset($1::jsonb) AS r (tx_hash text, log_index integer, block_number bigint, block_time timestamptz, token_address text,
       from_address text, to_address text, amount numeric, reference_keys text[], status text)
     ON CONFLICT (livemode, chain, tx_hash, log_index) DO UPDATE
       SET status = EXCLUDED.status, removed_at = NULL, block_number = EXCLUDED.block_number, block_time = EXCLUDED.block_time
       WHERE transfers.status = 'removed'`,
    [
      JSON.stringify(
        credits.map((credit) => ({
          tx_hash: credit.signature,
          log_index: credit.accountIndex,
          block_number: credit.slot.toString(),
          block_time: credit.blockTime?.toISOString() ?? null,
          token_address: credit.mint,
          from_address: credit.from,
          to_address: credit.owner || owner,
          // Base units as decimal text: numeric(78,0) takes it exactly, a JSON number would not.
          amount: credit.amount.toString(),
          reference_keys: credit.references,
          status: credit.failed ? 'failed' : 'observed',
        })),
      ),
    ],
  );
  return rowCount ?? 0;
}

/** Marks stored 'confirmed' signatures finalized. */
export async function markFinalized(sql: Sql, tokenAccount: string, signatures: string[]): Promise<void> {
  if (signatures.length === 0) return;
  await sql.query(
    `UPDATE solana_signatures SET commitment = 'finalized', updated_at = now()
     WHERE token_account = $1 AND signature = ANY($2::text[]) AND commitment = 'confirmed'`,
    [tokenAccount, signatures],
  );
}

/**
 * Marks signatures that vanished before finalization removed, with the transfers they made
 * (kept for audit, no longer counted: the engine re-evaluates their sessions).
 * @returns how many transfers were removed.
 */
export async function markRemoved(sql: Sql, tokenAccount: string, removed: StoredSignature[]): Promise<number> {
  if (removed.length === 0) return 0;
  await sql.query(
    `UPDATE solana_signatures SET commitment = 'removed', updated_at = now()
     WHERE token_account = $1 AND signature = ANY($2::text[]) AND commitment = 'confirmed'`,
    [tokenAccount, removed.map((row) => row.signature)],
  );
  const credits = removed.filter((row) => row.accountIndex !== null);
  if (credits.length === 0) return 0;
  const { rowCount } = await sql.query(
    `UPDATE transfers SET status = 'removed', removed_at = now()
     FROM unnest($1::text[], $2::int[]) AS gone (signature, account_index)
     WHERE transfers.livemode AND transfers.chain = 'solana' AND transfers.tx_hash = gone.signature
       AND transfers.log_index = gone.account_index AND transfers.status <> 'removed'`,
    [credits.map((row) => row.signature), credits.map((row) => row.accountIndex)],
  );
  return rowCount ?? 0;
}

/**
 * Moves stored, not yet finalized signatures to the slot they are now listed at (re-included in
 * another fork), with their transfers: the engine judges finality by `transfers.block_number`, so
 * it must never be the slot of a block the cluster abandoned.
 */
export async function moveSlots(
  sql: Sql,
  tokenAccount: string,
  moved: { signature: string; accountIndex: number | null; slot: bigint; blockTime: Date | null }[],
): Promise<void> {
  if (moved.length === 0) return;
  const rows = JSON.stringify(
    moved.map((row) => ({
      signature: row.signature,
      account_index: row.accountIndex,
      slot: row.slot.toString(),
      block_time: row.blockTime?.toISOString() ?? null,
    })),
  );
  await sql.query(
    `UPDATE solana_signatures s SET slot = m.slot, block_time = COALESCE(m.block_time, s.block_time), updated_at = now()
     FROM jsonb_to_recordset($2::jsonb) AS m (signature text, account_index integer, slot bigint, block_time timestamptz)
     WHERE s.token_account = $1 AND s.signature = m.signature AND s.commitment = 'confirmed'`,
    [tokenAccount, rows],
  );
  await sql.query(
    `UPDATE transfers t SET block_number = m.slot, block_time = COALESCE(m.block_time, t.block_time)
     FROM jsonb_to_recordset($1::jsonb) AS m (signature text, account_index integer, slot bigint, block_time timestamptz)
     WHERE t.livemode AND t.chain = 'solana' AND t.tx_hash = m.signature AND t.log_index = m.account_index AND t.status <> 'removed'`,
    [rows],
  );
}

/** Moves a token account's cursor (in the transaction that stored what it covers). */
export async function moveCursor(sql: Sql, tokenAccount: string, cursor: { signature: string; slot: bigint }): Promise<void> {
  await sql.query('UPDATE solana_token_accounts SET cursor_signature = $2, cursor_slot = $3, updated_at = now() WHERE address = $1', [
    tokenAccount,
    cursor.signature,
    cursor.slot,
  ]);
}

/** Stores the chain's slots: head at `confirmed`, and (when every pending signature up to it was checked) `finalized`. */
export async function saveChainHead(sql: Sql, head: { confirmedSlot: bigint; finalizedSlot: bigint | null; processedSlot: bigint | null }): Promise<void> {
  await sql.query(
    `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, finalized_block, head_seen_at, updated_at)
     VALUES (true, 'solana', $1, $2, $3, now(), now())
     ON CONFLICT (livemode, chain) DO UPDATE SET
       head_block = GREATEST(chain_heads.head_block, EXCLUDED.head_block),
       processed_block = COALESCE(GREATEST(chain_heads.processed_block, EXCLUDED.processed_block), chain_heads.processed_block, EXCLUDED.processed_block),
       finalized_block = COALESCE(GREATEST(chain_heads.finalized_block, EXCLUDED.finalized_block), chain_heads.finalized_block, EXCLUDED.finalized_block),
       head_seen_at = now(), updated_at = now()`,
    [head.confirmedSlot, head.processedSlot, head.finalizedSlot],
  );
}

/** Token accounts with signatures waiting for finalization. */
export async function loadPendingAccounts(sql: Sql): Promise<Set<string>> {
  const { rows } = await sql.query<{ token_account: string }>("SELECT DISTINCT token_account FROM solana_signatures WHERE commitment = 'confirmed'");
  return new Set(rows.map((row) => row.token_account));
}
