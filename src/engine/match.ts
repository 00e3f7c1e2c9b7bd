import type { Sql } from '../store/index.ts';
import { covers } from './decide.ts';
import { sessionColumns, toSession, type Session } from '../payments/session.ts';
import * as sessionSql from '../payments/sessionSql.ts';

/**
 * How far a transfer's block time may precede its session's creation and still pay it: chain
 * block timestamps come from validators' clocks (EVM allows ~15 s of drift) and the session row
 * from ours; a minute absorbs both without letting yesterday's payment pay today's session.
 */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * An overpayment is attributed by the "only session waiting on this wallet" rule only up to
 * twice what is still due: a transfer far larger than any open session is more likely the
 * merchant's own money movement than a customer, and is left for the merchant to attribute.
 */
const SOLE_CANDIDATE_MAX_FACTOR = 2n;

/** The transfer columns matching reads. */
export interface TransferToMatch {
  id: bigint;
  livemode: boolean;
  chain: string;
  token_address: string;
  to_address: string;
  amount: string;
  reference_keys: string[];
  paid_at: Date;
}

/** The session fields matching reads. */
const CANDIDATE_FIELDS = [
  'id',
  'merchantId',
  'status',
  'amountDue',
  'tokenAddresses',
  'payTo',
  'livemode',
  'chain',
  'createdAt',
  'monitorUntil',
] as const satisfies readonly (keyof Session)[];

/** A session as matching sees it, with its merchant's payment tolerance; amounts parsed to bigint once per batch. */
export type Candidate = Pick<Session, (typeof CANDIDATE_FIELDS)[number]> & {
  /** What its counted transfers sum to (plus, during a batch, what the batch attributed to it). */
  received: bigint;
  toleranceBps: number;
};

/** How matching attributed a transfer (`manual` is the API's attribution). */
export type MatchMethod = 'reference' | 'amount';

const CANDIDATE_COLUMNS = `${sessionColumns(CANDIDATE_FIELDS)}, m.payment_tolerance_bps AS "toleranceBps",
  (SELECT coalesce(sum(t.amount), 0) FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed')::text AS received`;

const parseCandidate = (row: Record<string, unknown>): Candidate => ({
  ...toSession<(typeof CANDIDATE_FIELDS)[number]>(row),
  toleranceBps: row.toleranceBps as number,
  received: BigInt(row.received as string),
});

function inWindow(candidate: Candidate, paidAt: Date): boolean {
  return paidAt.getTime() >= candidate.createdAt.getTime() - CLOCK_SKEW_SECONDS * 1000 && paidAt <= candidate.monitorUntil;
}

/**
 * The session a transfer pays, by the documented rules, in order (docs/payment-lifecycle.md, "Matching"):
 * 1. a Solana Pay `reference` key naming a session on the same chain, wallet and token;
 * 2. the exact `amount_due` of a session on the same (livemode, chain, wallet, token) whose window
 *    (created_at .. monitor_until) holds the payment time: due amounts are unique while reserved;
 * 3. exactly what is still missing on a partly paid session (a top-up);
 * 4. within the merchant's tolerance below the due amount of exactly one unpaid session;
 * 5. the only session on that wallet and token still waiting for money (under- or overpayment,
 *    the latter up to twice what is missing).
 * Ties in 2 and 3 go to the oldest session (created_at, id). Anything else is unmatched.
 * Pure given the rows; `matchTransfers` reads them, once per batch.
 */
export function chooseSession(transfer: TransferToMatch, candidates: Candidate[]): Candidate | undefined {
  const amount = BigInt(transfer.amount);
  const eligible = candidates.filter((c) => inWindow(c, transfer.paid_at));
  const unpaid = eligible.filter((c) => c.status !== 'settled' && c.status !== 'confirmed' && c.received < c.amountDue);
  const exact = eligible.filter((c) => c.amountDue === amount);
  if (exact.length > 0) return exact.find((c) => unpaid.includes(c)) ?? exact[0];
  const topUp = unpaid.find((c) => c.received > 0n && c.amountDue - c.received === amount);
  if (topUp) return topUp;
  const tolerated = unpaid.filter((c) => c.received === 0n && amount < c.amountDue && covers(amount, c.amountDue, c.toleranceBps));
  if (tolerated.length === 1) return tolerated[0];
  if (unpaid.length === 1) {
    const missing = unpaid[0]!.amountDue - unpaid[0]!.received;
    if (amount <= missing * SOLE_CANDIDATE_MAX_FACTOR) return unpaid[0];
  }
  return undefined;
}

/** Oldest first, as the rules' ties want: (created_at, id). */
const byAge = (a: Candidate, b: Candidate) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The sessions a batch of transfers can pay, read once for the whole batch: the sessions their
 * reference keys name, and every session on their wallets whose window overlaps the batch's
 * payment times. Reading per batch rather than per transfer keeps matching linear: a merchant
 * with thousands of open sessions on one wallet costs one read of them per 500 transfers, not one
 * per transfer. `received` is the live sum of each session's counted transfers at the time of
 * the read; matching adds what it attributes in the batch (`MatchBatch.pending`).
 */
/** The candidate sessions on one wallet, indexed for the common case of an exact due amount. */
interface WalletSessions {
  all: Candidate[];
  byDue: Map<bigint, Candidate[]>;
  merchants: Set<string>;
}

async function readCandidates(
  sql: Sql,
  transfers: TransferToMatch[],
): Promise<{ byReference: Map<string, Candidate[]>; byWallet: Map<string, WalletSessions> }> {
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
  const times = transfers.map((transfer) => transfer.paid_at.getTime());
  const { rows } = await sql.query(sessionSql.selectSessionsOnWallets(CANDIDATE_COLUMNS), [
    first.livemode,
    first.chain,
    [...new Set(transfers.map((transfer) => transfer.to_address))],
    new Date(Math.min(...times)),
    new Date(Math.max(...times)),
    CLOCK_SKEW_SECONDS,
  ]);
  const byWallet = new Map<string, WalletSessions>();
  for (const row of rows.map(parseCandidate).sort(byAge)) {
    let wallet = byWallet.get(row.payTo);
    if (!wallet) byWallet.set(row.payTo, (wallet = { all: [], byDue: new Map(), merchants: new Set() }));
    wallet.all.push(row);
    wallet.merchants.add(row.merchantId);
    const sameDue = wallet.byDue.get(row.amountDue);
    if (sameDue) sameDue.push(row);
    else wallet.byDue.set(row.amountDue, [row]);
  }
  return { byReference, byWallet };
}

/**
 * The session `transfer` pays, by the documented rules (see `chooseSession`), given the batch's
 * candidates and what this batch has already attributed to each session (`pending`).
 */
function decide(
  transfer: TransferToMatch,
  candidates: Awaited<ReturnType<typeof readCandidates>>,
  pending: ReadonlyMap<string, bigint>,
): { sessionId: string; method: MatchMethod } | undefined {
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
      return fits ? { sessionId: named.id, method: 'reference' } : undefined;
    }
  }
  const wallet = candidates.byWallet.get(transfer.to_address);
  if (!wallet) return undefined;
  const inPlay = (list: Candidate[]) =>
    list
      .filter((candidate) => candidate.tokenAddresses.includes(transfer.token_address) && inWindow(candidate, transfer.paid_at))
      .map((candidate) => {
        const attributed = pending.get(candidate.id);
        return attributed === undefined ? candidate : { ...candidate, received: candidate.received + attributed };
      });
  // The usual case, an exact due amount on a one-merchant wallet: rule 2 looks at the sessions
  // with that due amount only, so they are all `chooseSession` needs (no scan of the wallet).
  if (wallet.merchants.size === 1) {
    const exact = inPlay(wallet.byDue.get(BigInt(transfer.amount)) ?? []);
    if (exact.length > 0) return { sessionId: chooseSession(transfer, exact)!.id, method: 'amount' };
  }
  const sessions = inPlay(wallet.all);
  // Two merchants' sessions on one address: the amount cannot say whose money it is, and guessing
  // would hand one merchant's payment to another. It stays unmatched for a verified owner to claim.
  if (new Set(sessions.map((candidate) => candidate.merchantId)).size > 1) return undefined;
  const chosen = chooseSession(transfer, sessions);
  return chosen && { sessionId: chosen.id, method: 'amount' };
}

/**
 * Matches up to `limit` transfers of one (livemode, chain) that no matching has looked at yet,
 * oldest block first, in the caller's transaction (which holds the engine's chain lock). Each
 * transfer is decided once: matched to one session, or marked checked and left unmatched for the
 * merchant to attribute by hand. Transfers are decided in order, each seeing what the earlier
 * ones in the batch paid, exactly as if each were matched in a transaction of its own; the whole
 * batch costs four queries.
 */
export async function matchTransfers(
  sql: Sql,
  params: { livemode: boolean; chain: string; limit: number },
): Promise<{ seen: number; matched: number; unmatched: number }> {
  const { rows } = await sql.query<TransferToMatch>(
    `SELECT id, livemode, chain, token_address, to_address, amount, reference_keys, coalesce(block_time, observed_at) AS paid_at
       FROM transfers
      WHERE livemode = $1 AND chain = $2 AND match_checked_at IS NULL AND status = 'observed' AND session_id IS NULL
      ORDER BY block_number, log_index, id
      LIMIT $3
      FOR UPDATE`,
    [params.livemode, params.chain, params.limit],
  );
  if (rows.length === 0) return { seen: 0, matched: 0, unmatched: 0 };
  const candidates = await readCandidates(sql, rows);
  const pending = new Map<string, bigint>();
  const decided = rows.map((transfer) => {
    const found = decide(transfer, candidates, pending);
    if (found) pending.set(found.sessionId, (pending.get(found.sessionId) ?? 0n) + BigInt(transfer.amount));
    return { id: transfer.id, found };
  });
  const matched = decided.filter((entry) => entry.found);
  if (matched.length > 0) {
    await sql.query(
      `UPDATE transfers t SET session_id = d.session_id, match_method = d.method, matched_at = now(), match_checked_at = now()
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, session_id, method) WHERE t.id = d.id`,
      [matched.map((entry) => entry.id), matched.map((entry) => entry.found!.sessionId), matched.map((entry) => entry.found!.method)],
    );
  }
  const unmatched = decided.filter((entry) => !entry.found).map((entry) => entry.id);
  if (unmatched.length > 0) await sql.query('UPDATE transfers SET match_checked_at = now() WHERE id = ANY($1::bigint[])', [unmatched]);
  return { seen: rows.length, matched: matched.length, unmatched: unmatched.length };
}
