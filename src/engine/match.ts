import { prepared, type Sql } from '../store/index.ts';
import { sessionColumns, toSession } from '../payments/session.ts';
import * as sessionSql from '../payments/sessionSql.ts';
import {
  CANDIDATE_FIELDS,
  CLOCK_SKEW_SECONDS,
  amountMatchable,
  byAge,
  inWindow,
  type Candidate,
  type MatchMethod,
  type TransferToMatch,
} from './matchRules.ts';
import { attributeOnWallet, chooseOnWallet, indexWallets } from './walletCandidates.ts';
import { decideByDeposit, readDeposits } from './depositMatch.ts';

export { CLOCK_SKEW_SECONDS, chooseSession, inWindow, type Candidate, type MatchMethod, type TransferToMatch } from './matchRules.ts';

/** The transfer columns matching reads, as SQL over `transfers` (`alias`: its alias and a dot, or nothing). */
const transferToMatchColumns = (alias: string) =>
  `${alias}id, ${alias}livemode, ${alias}chain, ${alias}tx_hash, ${alias}token_address, ${alias}to_address, ${alias}amount, ${alias}reference_keys, coalesce(${alias}block_time, ${alias}observed_at) AS paid_at`;

/** The transfer columns matching reads, as SQL over `transfers` (no alias). */
export const TRANSFER_TO_MATCH_COLUMNS = transferToMatchColumns('');

const CANDIDATE_COLUMNS = `${sessionColumns(CANDIDATE_FIELDS)}, m.payment_tolerance_bps AS "toleranceBps",
  (SELECT coalesce(sum(t.amount), 0) FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed')::text AS received`;

const parseCandidate = (row: Record<string, unknown>): Candidate => ({
  ...toSession<(typeof CANDIDATE_FIELDS)[number]>(row),
  toleranceBps: row.toleranceBps as number,
  received: BigInt(row.received as string),
});

/** A claim on a transfer's transaction (migrations/019): the session it names and who made it. */
interface ClaimOnTransaction {
  session: Candidate;
  source: 'proof' | 'x402';
}

/** Claims on a batch's transactions with their sessions. $1 livemode, $2 chain, $3 tx hashes. */
const SELECT_CLAIMS = `SELECT c.tx_hash AS "claimTxHash", c.source AS "claimSource", ${CANDIDATE_COLUMNS}
   FROM transaction_claims c JOIN payment_sessions s ON s.id = c.session_id JOIN merchants m ON m.id = s.merchant_id
  WHERE c.livemode = $1 AND c.chain = $2 AND c.tx_hash = ANY($3::text[])`;

/** Who verified which of some receiving addresses on one chain (`amountMatchable`). $1 chain, $2 addresses. */
const SELECT_VERIFIERS = `SELECT address, merchant_id AS "merchantId" FROM wallets WHERE chain = $1 AND address = ANY($2::text[]) AND verified_at IS NOT NULL`;

/**
 * The merchants that verified each of `candidates`' receiving addresses, for a live batch; none
 * for a sandbox batch (verification is a live-mode fact) or one with no candidates (no query).
 */
async function readVerifiers(sql: Sql, params: { livemode: boolean; chain: string; candidates: Candidate[] }): Promise<Map<string, Set<string>>> {
  const verifiers = new Map<string, Set<string>>();
  if (!params.livemode || params.candidates.length === 0) return verifiers;
  const { rows } = await sql.query<{ address: string; merchantId: string }>(SELECT_VERIFIERS, [
    params.chain,
    [...new Set(params.candidates.map((candidate) => candidate.payTo))],
  ]);
  for (const row of rows) {
    const set = verifiers.get(row.address);
    if (set) set.add(row.merchantId);
    else verifiers.set(row.address, new Set([row.merchantId]));
  }
  return verifiers;
}

type BatchCandidates = Awaited<ReturnType<typeof readCandidates>>;

/**
 * The sessions a batch of transfers can pay, read once for the whole batch: the sessions their
 * reference keys name, the sessions claiming their transactions, and every session on their
 * wallets whose window overlaps the batch's payment times and that amount matching may pay (who
 * verified those wallets decides: the verified owner wins, `amountMatchable`). Reading per batch
 * rather than per transfer keeps matching linear: a merchant with thousands of open sessions on
 * one wallet costs one read of them per batch (`MATCH_BATCH` transfers), not one per transfer,
 * and `walletCandidates.ts` indexes them for the rules. `received` is the live sum of each
 * session's counted transfers at the time of the read; matching adds what it attributes in the
 * batch (`pending`).
 */
async function readCandidates(sql: Sql, transfers: TransferToMatch[]) {
  const references = [...new Set(transfers.flatMap((transfer) => transfer.reference_keys))];
  const byReference = new Map<string, Candidate[]>();
  if (references.length > 0) {
    const { rows } = await sql.query(sessionSql.selectSessionsByReference(CANDIDATE_COLUMNS), [references]);
    for (const row of rows.map((row) => ({ ...parseCandidate(row), reference: row.reference as string })).sort(byAge)) {
      const list = byReference.get(row.reference);
      if (list) list.push(row);
      else byReference.set(row.reference, [row]);
    }
  }
  const first = transfers[0]!;
  const claims = new Map<string, ClaimOnTransaction>();
  const { rows: claimRows } = await sql.query(SELECT_CLAIMS, [first.livemode, first.chain, [...new Set(transfers.map((transfer) => transfer.tx_hash))]]);
  for (const row of claimRows) claims.set(row.claimTxHash as string, { session: parseCandidate(row), source: row.claimSource as 'proof' | 'x402' });
  const times = transfers.map((transfer) => transfer.paid_at.getTime());
  const { rows } = await sql.query(sessionSql.selectSessionsOnWallets(CANDIDATE_COLUMNS), [
    first.livemode,
    first.chain,
    [...new Set(transfers.map((transfer) => transfer.to_address))],
    new Date(Math.min(...times)),
    new Date(Math.max(...times)),
    CLOCK_SKEW_SECONDS,
  ]);
  const onWallets = rows.map(parseCandidate);
  // The claiming sessions' addresses too: a proof waiting since before its address was verified
  // by another merchant is refused as one made now would be (claims.ts).
  const claiming = [...claims.values()].map((claim) => claim.session);
  const verifiers = await readVerifiers(sql, { livemode: first.livemode, chain: first.chain, candidates: [...onWallets, ...claiming] });
  return { byReference, byWallet: indexWallets(onWallets, verifiers), claims, verifiers };
}

/** A session as matching found it and how. */
interface Evidence {
  session: Candidate;
  method: 'reference' | 'amount';
}

/**
 * The session `transfer` pays by its reference or amount (see `chooseSession`), given the batch's
 * candidates (their wallet indexes know what this batch has already attributed).
 */
function decideByEvidence(transfer: TransferToMatch, candidates: BatchCandidates): Evidence | undefined {
  if (transfer.reference_keys.length > 0) {
    const sessions = [...new Map(transfer.reference_keys.flatMap((key) => candidates.byReference.get(key) ?? []).map((row) => [row.id, row])).values()];
    // One credit naming two sessions (one transaction paying two invoices into one token
    // account: the balance shows only the sum): which session gets what cannot be told, and
    // guessing would overpay one and leave the other unpaid. It waits for the merchant.
    if (sessions.length > 1) return undefined;
    const named = sessions[0];
    if (named) {
      // The reference names one session: if the money went to another wallet, token or chain it
      // does not pay that session, and guessing another one would be wrong.
      const fits =
        named.livemode === transfer.livemode &&
        named.chain === transfer.chain &&
        named.payTo === transfer.to_address &&
        named.tokenAddresses.includes(transfer.token_address) &&
        transfer.paid_at <= named.monitorUntil;
      return fits ? { session: named, method: 'reference' } : undefined;
    }
  }
  const wallet = candidates.byWallet.get(transfer.to_address);
  const chosen = wallet && chooseOnWallet(wallet, transfer);
  return chosen && { session: chosen, method: 'amount' };
}

/**
 * Why `transfer` cannot pay the session a claim names, or undefined when it can: it must be in
 * the session's mode and chain, pay its wallet in one of its tokens, and have been paid within
 * its window (created_at less the clock skew .. monitor_until), as amount matching requires, so a
 * claim cannot bind an old payment to a new session.
 */
export function claimMisfit(
  session: Pick<Candidate, 'livemode' | 'chain' | 'payTo' | 'tokenAddresses' | 'createdAt' | 'monitorUntil'>,
  transfer: Pick<TransferToMatch, 'livemode' | 'chain' | 'to_address' | 'token_address' | 'paid_at'>,
): string | undefined {
  if (session.livemode !== transfer.livemode || session.chain !== transfer.chain) return `it is not on the session's chain (${session.chain})`;
  if (session.payTo !== transfer.to_address) return `it pays ${transfer.to_address}, not the session's wallet ${session.payTo}`;
  if (!session.tokenAddresses.includes(transfer.token_address)) return `it pays in token ${transfer.token_address}, which the session does not accept`;
  if (!inWindow(session, transfer.paid_at)) {
    return transfer.paid_at < session.createdAt ? 'it was paid before the session was created' : "it was paid after the session's monitoring window";
  }
  return undefined;
}

/**
 * Whether a payer's proof (a `proof` claim: anyone can send any public hash) must yield to what
 * the transfer itself says: a Solana Pay reference naming another session, or exactly another
 * session's due amount when it is neither the claiming session's due amount nor what it still
 * misses. A hostile prover can thus not take another customer's exactly-paid transfer for their
 * own session; fuzzy rules (tolerance, top-up, sole candidate) are guesses and yield to a proof.
 */
function outranksProof(evidence: Evidence, transfer: TransferToMatch, claimed: Candidate): boolean {
  if (evidence.session.id === claimed.id) return false;
  if (evidence.method === 'reference') return true;
  const amount = BigInt(transfer.amount);
  return evidence.session.amountDue === amount && claimed.amountDue !== amount && claimed.amountDue - claimed.received !== amount;
}

/**
 * Another session on the transfer's wallet, of any merchant amount matching may pay there (on an
 * address one merchant verified, only that merchant's: `amountMatchable`), whose due amount the
 * transfer is exactly and which still asks for it, when that amount is neither the claimed
 * session's due amount nor what it still misses (the {@link outranksProof} rule without amount
 * matching's one-merchant condition).
 */
function exactDueElsewhere(
  transfer: TransferToMatch,
  candidates: BatchCandidates,
  pending: ReadonlyMap<string, bigint>,
  claimed: Candidate,
): Candidate | undefined {
  const amount = BigInt(transfer.amount);
  if (claimed.amountDue === amount || claimed.amountDue - claimed.received === amount) return undefined;
  return (candidates.byWallet.get(transfer.to_address)?.byDue.get(amount) ?? []).find(
    (candidate) =>
      candidate.id !== claimed.id &&
      candidate.tokenAddresses.includes(transfer.token_address) &&
      inWindow(candidate, transfer.paid_at) &&
      candidate.received + (pending.get(candidate.id) ?? 0n) < candidate.amountDue,
  );
}

/** What matching decided for one transfer: a session, and the refusal of a claim on its transaction when there was one. */
interface Decision {
  found?: { sessionId: string; method: MatchMethod };
  refusedClaim?: ClaimRefusal;
}

/** Why a claim was not honoured for one transfer: it does not fit the session (`claimMisfit`), or stronger evidence names another session. */
type ClaimRefusal = { kind: 'misfit'; misfit: string } | { kind: 'outranked'; method: 'reference' | 'amount'; sessionId: string };

/**
 * The session `transfer` pays. A claim on its transaction comes first: the transfer goes to the
 * claiming session when it fits it (`claimMisfit`), and otherwise to no session (a claimed
 * transaction is never handed to another session by amount); it is left for the merchant and
 * the refusal recorded. A payer's proof yields only to stronger evidence (`outranksProof`).
 */
function decide(transfer: TransferToMatch, candidates: BatchCandidates, pending: ReadonlyMap<string, bigint>): Decision {
  const claim = candidates.claims.get(transfer.tx_hash);
  if (!claim) {
    const evidence = decideByEvidence(transfer, candidates);
    return { found: evidence && { sessionId: evidence.session.id, method: evidence.method } };
  }
  const misfit = claimMisfit(claim.session, transfer);
  if (misfit) {
    // A payer's proof speaks for the transfers that pay its session only: another transfer of the
    // same transaction (a batch paying another wallet, maybe another merchant's exact due
    // amount) is matched as if nothing claimed it, so a proof cannot hold it hostage. The
    // gateway's own x402 transaction has one transfer, to its session; one that pays elsewhere
    // is suspect and waits for the merchant.
    if (claim.source === 'proof') {
      const evidence = decideByEvidence(transfer, candidates);
      return { found: evidence && { sessionId: evidence.session.id, method: evidence.method } };
    }
    return { refusedClaim: { kind: 'misfit', misfit } };
  }
  if (claim.source === 'proof' && !amountMatchable(claim.session, candidates.verifiers.get(claim.session.payTo))) {
    // The session's address was verified by other merchants since the proof was made: refused as
    // claimTransaction refuses it now, and the transfer is matched as if nothing claimed it.
    const evidence = decideByEvidence(transfer, candidates);
    return {
      found: evidence && { sessionId: evidence.session.id, method: evidence.method },
      refusedClaim: { kind: 'misfit', misfit: 'its wallet is verified by another account' },
    };
  }
  if (claim.source === 'proof') {
    const evidence = decideByEvidence(transfer, candidates);
    const attributed = pending.get(claim.session.id) ?? 0n;
    const claimed = { ...claim.session, received: claim.session.received + attributed };
    if (evidence && outranksProof(evidence, transfer, claimed)) {
      return {
        found: { sessionId: evidence.session.id, method: evidence.method },
        refusedClaim: { kind: 'outranked', method: evidence.method, sessionId: evidence.session.id },
      };
    }
    // Where amount matching stands aside (sessions of two merchants on an address none or both of
    // them verified) the exact due amount of a session still asking for it outranks a copied hash
    // all the same; the transfer then waits for the merchant, as amount matching would leave it.
    // A session amount matching may not pay (another merchant's, on an address its owner
    // verified) outranks nothing: it cannot block a proof for the owner's session.
    const rival = exactDueElsewhere(transfer, candidates, pending, claimed);
    if (rival) return { refusedClaim: { kind: 'outranked', method: 'amount', sessionId: rival.id } };
  }
  return { found: { sessionId: claim.session.id, method: 'claim' } };
}

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
    const { found, refusedClaim } = decideByDeposit(transfer, deposits) ?? decide(transfer, candidates, pending);
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
        publicReason: outranked ? `its ${refusedClaim.method} pays another payment session` : refusedClaim.misfit,
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
