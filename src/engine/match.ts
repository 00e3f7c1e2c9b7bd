import { prepared, type Sql } from '../store/index.ts';
import type { TransferToMatch } from './matchRules.ts';
import { attributeOnWallet } from './walletCandidates.ts';
import { readCandidates } from './batchCandidates.ts';
import { decideTransfer, publicReasonOf } from './claimDecision.ts';
import { decideByDeposit, readDeposits } from './depositMatch.ts';

export { claimMisfit, proofExcess } from './claimDecision.ts';
export { CLOCK_SKEW_SECONDS, chooseSession, inWindow, type Candidate, type MatchMethod, type TransferToMatch } from './matchRules.ts';

/** The transfer columns matching reads, as SQL over `transfers` (`alias`: its alias and a dot, or nothing). */
const transferToMatchColumns = (alias: string) =>
  `${alias}id, ${alias}livemode, ${alias}chain, ${alias}tx_hash, ${alias}token_address, ${alias}to_address, ${alias}amount, ${alias}reference_keys, coalesce(${alias}block_time, ${alias}observed_at) AS paid_at`;

/** The transfer columns matching reads, as SQL over `transfers` (no alias). */
export const TRANSFER_TO_MATCH_COLUMNS = transferToMatchColumns('');

/** A claim the matcher could not honour for one transfer of its transaction (recorded on the claim, logged by the engine). */
export interface RefusedClaim {
  transferId: bigint;
  txHash: string;
  sessionId: string;
  /** For operators (the claim row, the log): names the transfer and the session that got it. */
  reason: string;
  /** For the claimant: names no other session (a session id is its checkout's capability). */
  publicReason: string;
}

/** Where a batch starts in matching's queue: after this (block, log index, transfer id). */
export interface QueuePosition {
  block: bigint;
  logIndex: number;
  transferId: bigint;
}

const QUEUE_START: QueuePosition = { block: -1n, logIndex: -1, transferId: -1n };

/**
 * The next entries of one (livemode, chain) in matching's queue (migration 026: the transfers no
 * matching has decided), in chain order after a position. Read alone, narrow rows by the queue's
 * own index, so the plan does not depend on how the planner sizes the queue against `transfers`
 * (joined in one statement, an unanalysed queue got a plan that read every unmatched transfer).
 * $1 livemode, $2 chain, $3 limit, $4..$6 the position.
 */
const SELECT_QUEUE = `SELECT transfer_id, block_number, log_index FROM transfers_undecided
  WHERE livemode = $1 AND chain = $2 AND (block_number, log_index, transfer_id) > ($4, $5, $6)
  ORDER BY block_number, log_index, transfer_id
  LIMIT $3`;

/** Those entries' transfers, locked, with what says whether matching can take them. $1 ids. */
const LOCK_QUEUED = `SELECT ${transferToMatchColumns('')}, status, session_id FROM transfers WHERE id = ANY($1::bigint[]) FOR UPDATE`;

/** The undecided transfers of one transaction (a claim being made), found by hash, locked. $1 livemode, $2 chain, $3 limit, $4 tx hash. */
const SELECT_UNDECIDED_OF_TRANSACTION = `SELECT ${transferToMatchColumns('t.')}
   FROM transfers t
  WHERE t.livemode = $1 AND t.chain = $2 AND t.tx_hash = $4 AND t.status = 'observed' AND t.session_id IS NULL
    AND EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id)
  ORDER BY t.block_number, t.log_index, t.id
  LIMIT $3
  FOR UPDATE OF t`;

interface Undecided {
  seen: number;
  next: QueuePosition;
  /** The transfers to decide, in chain order, locked. */
  rows: TransferToMatch[];
}

/**
 * The next `limit` entries of the queue after `after` and their transfers that matching can take
 * (on chain, not attributed), locked, in queue order. An entry whose transfer a reorg removed
 * stays queued (re-included, it is decided then); one attributed by other means is decided, so it
 * leaves the queue here.
 */
async function nextUndecided(sql: Sql, params: { livemode: boolean; chain: string; limit: number; after?: QueuePosition }): Promise<Undecided> {
  const after = params.after ?? QUEUE_START;
  const { rows: queued } = await sql.query<{ transfer_id: bigint; block_number: bigint; log_index: number }>(prepared(SELECT_QUEUE), [
    params.livemode,
    params.chain,
    params.limit,
    after.block,
    after.logIndex,
    after.transferId,
  ]);
  const last = queued.at(-1);
  const next = last ? { block: last.block_number, logIndex: last.log_index, transferId: last.transfer_id } : after;
  if (queued.length === 0) return { seen: 0, next, rows: [] };
  const { rows: locked } = await sql.query<TransferToMatch & { status: string; session_id: string | null }>(prepared(LOCK_QUEUED), [
    queued.map((entry) => entry.transfer_id),
  ]);
  const byId = new Map(locked.map((row) => [row.id, row]));
  const rows: TransferToMatch[] = [];
  const decided: bigint[] = [];
  for (const entry of queued) {
    const transfer = byId.get(entry.transfer_id);
    // Attributed by other means (or its row deleted): nothing left to decide.
    if (!transfer || transfer.session_id !== null) decided.push(entry.transfer_id);
    else if (transfer.status === 'observed') rows.push(transfer);
  }
  if (decided.length > 0) await sql.query(prepared(DELETE_DECIDED), [decided]);
  return { seen: queued.length, next, rows };
}

async function undecidedOfTransaction(sql: Sql, params: { livemode: boolean; chain: string; limit: number; txHash: string }): Promise<Undecided> {
  const { rows } = await sql.query<TransferToMatch>(SELECT_UNDECIDED_OF_TRANSACTION, [params.livemode, params.chain, params.limit, params.txHash]);
  return { seen: rows.length, next: QUEUE_START, rows };
}

/** Takes decided transfers out of the queue. $1 transfer ids. */
const DELETE_DECIDED = 'DELETE FROM transfers_undecided WHERE transfer_id = ANY($1::bigint[])';

/** What one `matchTransfers` batch did. */
export interface MatchResult {
  /** Queue entries read (fewer than the limit: the queue is drained up to now). */
  seen: number;
  /** Where the next batch of the same pass starts. */
  next: QueuePosition;
  matched: number;
  unmatched: number;
  refusedClaims: RefusedClaim[];
}

/**
 * Matches up to `limit` transfers of one (livemode, chain) that no matching has looked at yet,
 * oldest block first, in the caller's transaction (which holds the engine's chain lock). Each
 * transfer is decided once (it leaves the queue of migration 026): matched to one session, or left
 * unmatched, unwritten, for the merchant to attribute by hand. Transfers are decided in order, each seeing what the earlier
 * ones in the batch paid, exactly as if each were matched in a transaction of its own; the whole
 * batch costs five queries (one more in live mode, who verified the wallets; one more when a
 * claim is refused). `txHash` narrows it to one transaction (a claim being made).
 */
export async function matchTransfers(
  sql: Sql,
  params: { livemode: boolean; chain: string; limit: number; txHash?: string; after?: QueuePosition },
): Promise<MatchResult> {
  const { seen, next, rows } = params.txHash ? await undecidedOfTransaction(sql, { ...params, txHash: params.txHash }) : await nextUndecided(sql, params);
  if (rows.length === 0) return { seen, next, matched: 0, unmatched: 0, refusedClaims: [] };
  const candidates = await readCandidates(sql, rows);
  // Rule 0, before claims and every other rule: a deposit address names its session (depositMatch.ts).
  const deposits = await readDeposits(sql, rows);
  const pending = new Map<string, bigint>();
  const refusedClaims: RefusedClaim[] = [];
  const decided = rows.map((transfer) => {
    const { found, refusedClaim } = decideByDeposit(transfer, deposits) ?? decideTransfer(transfer, candidates, pending);
    if (found) {
      // Every session a transfer can go to pays its wallet (a reference or a claim to another
      // wallet does not fit), so that wallet's index is the one to tell.
      const amount = BigInt(transfer.amount);
      pending.set(found.sessionId, (pending.get(found.sessionId) ?? 0n) + amount);
      const wallet = candidates.byWallet.get(transfer.to_address);
      if (wallet) attributeOnWallet(wallet, found.sessionId, amount);
    }
    if (refusedClaim) {
      const outranked = refusedClaim.kind === 'outranked';
      refusedClaims.push({
        transferId: transfer.id,
        txHash: transfer.tx_hash,
        sessionId: candidates.claims.get(transfer.tx_hash)!.session.id,
        reason: `transfer trf_${transfer.id}: ${outranked ? `its ${refusedClaim.method} names session ${refusedClaim.sessionId}` : refusedClaim.misfit}`,
        publicReason: publicReasonOf(refusedClaim),
      });
    }
    return { id: transfer.id, found };
  });
  const matched = decided.filter((entry) => entry.found);
  if (matched.length > 0) {
    await sql.query(
      `UPDATE transfers t SET session_id = d.session_id, match_method = d.method, matched_at = now()
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, session_id, method) WHERE t.id = d.id`,
      [matched.map((entry) => entry.id), matched.map((entry) => entry.found!.sessionId), matched.map((entry) => entry.found!.method)],
    );
  }
  // Every transfer of the batch is decided, matched or not: out of the queue. An unmatched one is
  // not written at all (it stays as stored, listed for the merchant).
  await sql.query(prepared(DELETE_DECIDED), [rows.map((row) => row.id)]);
  const unmatched = decided.filter((entry) => !entry.found);
  if (refusedClaims.length > 0) {
    await sql.query(
      `UPDATE transaction_claims c SET refused_at = now(), refused_reason = r.reason
         FROM unnest($3::text[], $4::text[]) AS r(tx_hash, reason) WHERE c.livemode = $1 AND c.chain = $2 AND c.tx_hash = r.tx_hash`,
      [params.livemode, params.chain, refusedClaims.map((refusal) => refusal.txHash), refusedClaims.map((refusal) => refusal.reason)],
    );
  }
  return { seen, next, matched: matched.length, unmatched: unmatched.length, refusedClaims };
}
