import type { Sql } from '../store/index.ts';
import { sessionColumns, toSession } from '../payments/session.ts';
import * as sessionSql from '../payments/sessionSql.ts';
import { CANDIDATE_FIELDS, CLOCK_SKEW_SECONDS, byAge, type Candidate, type TransferToMatch } from './matchRules.ts';
import { chooseOnWallet, indexWallets } from './walletCandidates.ts';

/**
 * The sessions a batch of transfers can pay, read once per batch, and the evidence (a reference,
 * an amount) that names one of them for a transfer. Matching (`match.ts`) and its claim rules
 * (`claimDecision.ts`) decide from these.
 */

const CANDIDATE_COLUMNS = `${sessionColumns(CANDIDATE_FIELDS)}, m.payment_tolerance_bps AS "toleranceBps",
  (SELECT coalesce(sum(t.amount), 0) FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed')::text AS received`;

const parseCandidate = (row: Record<string, unknown>): Candidate => ({
  ...toSession<(typeof CANDIDATE_FIELDS)[number]>(row),
  toleranceBps: row.toleranceBps as number,
  received: BigInt(row.received as string),
});

/** A claim on a transfer's transaction (migrations/019): the session it names and who made it. */
export interface ClaimOnTransaction {
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

/** The sessions one batch of transfers can pay, read once (`readCandidates`). */
export type BatchCandidates = Awaited<ReturnType<typeof readCandidates>>;

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
export async function readCandidates(sql: Sql, transfers: TransferToMatch[]) {
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
export interface Evidence {
  session: Candidate;
  method: 'reference' | 'amount';
}

/**
 * The session `transfer` pays by its reference or amount (see `chooseSession`), given the batch's
 * candidates (their wallet indexes know what this batch has already attributed).
 */
export function decideByEvidence(transfer: TransferToMatch, candidates: BatchCandidates): Evidence | undefined {
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
