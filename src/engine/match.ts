import type { Sql } from '../store/index.ts';
import { covers } from './decide.ts';
import type { PaymentStatus } from './stateMachine.ts';

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

interface Candidate {
  id: string;
  merchant_id: string;
  status: PaymentStatus;
  amount_due: string;
  received: string;
  token_addresses: string[];
  pay_to: string;
  livemode: boolean;
  chain: string;
  created_at: Date;
  monitor_until: Date;
  payment_tolerance_bps: number;
}

/** How matching attributed a transfer (`manual` is the API's attribution). */
export type MatchMethod = 'reference' | 'amount';

const CANDIDATE_COLUMNS = `s.id, s.merchant_id, s.status, s.amount_due, s.token_addresses, s.pay_to, s.livemode, s.chain, s.created_at, s.monitor_until,
  m.payment_tolerance_bps,
  (SELECT coalesce(sum(t.amount), 0) FROM transfers t WHERE t.session_id = s.id AND t.status = 'observed') AS received`;

function inWindow(candidate: Candidate, paidAt: Date): boolean {
  return paidAt.getTime() >= candidate.created_at.getTime() - CLOCK_SKEW_SECONDS * 1000 && paidAt <= candidate.monitor_until;
}

/**
 * The session a transfer pays, by the documented rules, in order (README "Matching"):
 * 1. a Solana Pay `reference` key naming a session on the same chain, wallet and token;
 * 2. the exact `amount_due` of a session on the same (livemode, chain, wallet, token) whose window
 *    (created_at .. monitor_until) holds the payment time: due amounts are unique while reserved;
 * 3. exactly what is still missing on a partly paid session (a top-up);
 * 4. within the merchant's tolerance below the due amount of exactly one unpaid session;
 * 5. the only session on that wallet and token still waiting for money (under- or overpayment,
 *    the latter up to twice what is missing).
 * Ties in 2 and 3 go to the oldest session (created_at, id). Anything else is unmatched.
 * Pure given the rows; `findSession` reads them.
 */
export function chooseSession(transfer: TransferToMatch, candidates: Candidate[]): Candidate | undefined {
  const amount = BigInt(transfer.amount);
  const eligible = candidates.filter((c) => inWindow(c, transfer.paid_at));
  const unpaid = eligible.filter((c) => c.status !== 'settled' && c.status !== 'confirmed' && BigInt(c.received) < BigInt(c.amount_due));
  const exact = eligible.filter((c) => BigInt(c.amount_due) === amount);
  if (exact.length > 0) return exact.find((c) => unpaid.includes(c)) ?? exact[0];
  const topUp = unpaid.find((c) => BigInt(c.received) > 0n && BigInt(c.amount_due) - BigInt(c.received) === amount);
  if (topUp) return topUp;
  const tolerated = unpaid.filter((c) => BigInt(c.received) === 0n && amount < BigInt(c.amount_due) && covers(amount, BigInt(c.amount_due), c.payment_tolerance_bps));
  if (tolerated.length === 1) return tolerated[0];
  if (unpaid.length === 1) {
    const missing = BigInt(unpaid[0]!.amount_due) - BigInt(unpaid[0]!.received);
    if (amount <= missing * SOLE_CANDIDATE_MAX_FACTOR) return unpaid[0];
  }
  return undefined;
}

/** Reads the candidate sessions for `transfer` and applies the rules of `chooseSession`. */
export async function findSession(sql: Sql, transfer: TransferToMatch): Promise<{ sessionId: string; method: MatchMethod } | undefined> {
  if (transfer.reference_keys.length > 0) {
    const { rows } = await sql.query<Candidate>(
      `SELECT ${CANDIDATE_COLUMNS} FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id
        WHERE s.reference = ANY($1::text[]) ORDER BY s.created_at, s.id`,
      [transfer.reference_keys],
    );
    const named = rows[0];
    if (named) {
      // The reference names one session: if the money went to another wallet, token or chain it
      // does not pay that session, and guessing another one would be wrong.
      const fits =
        named.livemode === transfer.livemode &&
        named.chain === transfer.chain &&
        named.pay_to === transfer.to_address &&
        named.token_addresses.includes(transfer.token_address) &&
        transfer.paid_at <= named.monitor_until;
      return fits ? { sessionId: named.id, method: 'reference' } : undefined;
    }
  }
  // Only the sessions the rules can pick are read, not every session on the wallet: all with this
  // exact due amount, the oldest exact top-up, up to two within tolerance and any two unpaid ones
  // (enough for "exactly one" to stay true or false). chooseSession then decides as on the full set.
  const { rows } = await sql.query<Candidate>(
    `WITH c AS MATERIALIZED (
       SELECT ${CANDIDATE_COLUMNS} FROM payment_sessions s JOIN merchants m ON m.id = s.merchant_id
        WHERE s.livemode = $1 AND s.chain = $2 AND s.pay_to = $3 AND $4 = ANY(s.token_addresses)
          AND s.monitor_until >= $5 AND s.created_at <= $5::timestamptz + make_interval(secs => $6)),
     u AS (SELECT * FROM c WHERE status NOT IN ('confirmed', 'settled') AND received < amount_due)
     (SELECT * FROM c WHERE amount_due = $7::numeric)
     UNION ALL (SELECT * FROM u WHERE received > 0 AND amount_due - received = $7::numeric ORDER BY created_at, id LIMIT 1)
     UNION ALL (SELECT * FROM u WHERE received = 0 AND $7::numeric < amount_due
                  AND $7::numeric * 10000 >= amount_due * (10000 - payment_tolerance_bps) ORDER BY created_at, id LIMIT 2)
     UNION ALL (SELECT * FROM u ORDER BY created_at, id LIMIT 2)`,
    [transfer.livemode, transfer.chain, transfer.to_address, transfer.token_address, transfer.paid_at, CLOCK_SKEW_SECONDS, transfer.amount],
  );
  const unique = [...new Map(rows.map((row) => [row.id, row])).values()].sort(
    (a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  // Two merchants' sessions on one address: the amount cannot say whose money it is, and guessing
  // would hand one merchant's payment to another. It stays unmatched for a verified owner to claim.
  if (new Set(unique.map((candidate) => candidate.merchant_id)).size > 1) return undefined;
  const chosen = chooseSession(transfer, unique);
  return chosen && { sessionId: chosen.id, method: 'amount' };
}

/**
 * Matches up to `limit` transfers of one (livemode, chain) that no matching has looked at yet,
 * oldest block first, in the caller's transaction (which holds the engine's chain lock). Each
 * transfer is decided once: matched to one session, or marked checked and left unmatched for the
 * merchant to attribute by hand.
 */
export async function matchTransfers(sql: Sql, params: { livemode: boolean; chain: string; limit: number }): Promise<{ seen: number; matched: number; unmatched: number }> {
  const { rows } = await sql.query<TransferToMatch>(
    `SELECT id, livemode, chain, token_address, to_address, amount, reference_keys, coalesce(block_time, observed_at) AS paid_at
       FROM transfers
      WHERE livemode = $1 AND chain = $2 AND match_checked_at IS NULL AND status = 'observed' AND session_id IS NULL
      ORDER BY block_number, log_index, id
      LIMIT $3
      FOR UPDATE`,
    [params.livemode, params.chain, params.limit],
  );
  let matched = 0;
  for (const transfer of rows) {
    const found = await findSession(sql, transfer);
    if (found) {
      await sql.query(
        `UPDATE transfers SET session_id = $2, match_method = $3, matched_at = now(), match_checked_at = now() WHERE id = $1`,
        [transfer.id, found.sessionId, found.method],
      );
      matched += 1;
    } else {
      await sql.query('UPDATE transfers SET match_checked_at = now() WHERE id = $1', [transfer.id]);
    }
  }
  return { seen: rows.length, matched, unmatched: rows.length - matched };
}
