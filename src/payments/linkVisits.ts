import type { Sql } from '../store/index.ts';

/**
 * Link visits without payment (issue 27). A single-pair payment link makes its session at the
 * visit (so that wallets and agents get payable instructions at once: `GET /pay/{id}` answers 303
 * to a checkout whose JSON is the instructions), so every visitor who only looked leaves a
 * session behind. The merchant's lists leave those out by default, as Stripe's payments list
 * shows only checkouts with a payment attempt: a session is a "link visit without payment" while
 *
 * - a payment link made it (`payment_link_id`),
 * - at the visit itself: no choice was made (`payment_options` is null; a link with several
 *   options makes its session only at the customer's choice, an act worth listing),
 * - and nothing was ever paid: still waiting or expired (not confirming, confirmed, settled or
 *   failed), no money counted, and no transfer was ever matched to it (not even one a reorg
 *   removed later, or one an owner attributed by hand).
 *
 * The moment a transfer is matched it is an ordinary payment in every list and figure. The API's
 * `GET /payments` and `GET /sessions` still list every session (the record stays complete);
 * only the dashboard hides them, with a count and a filter that shows them.
 */

/**
 * The SQL condition (table alias `s`) that a session is a link visit without payment. Its first
 * four terms are the predicate of the partial index `payment_sessions_link_visits` (migration
 * 049), written the same way so the planner can use that index for the count.
 */
export const LINK_VISIT_WITHOUT_PAYMENT = `(s.payment_link_id IS NOT NULL AND s.payment_options IS NULL
  AND s.status IN ('created', 'pending', 'expired') AND s.amount_received = 0
  AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.session_id = s.id))`;

/** Which sessions a list shows: `include` every one (the API), `hide` leaves link visits without payment out (the dashboard's default), `only` shows just them. */
export type LinkVisitsFilter = 'include' | 'hide' | 'only';

/** The most link visits the dashboard counts exactly; past it, it says "more than". */
export const LINK_VISIT_COUNT_CAP = 1_000;

/**
 * How many of the merchant's sessions of one mode are link visits without payment, created in
 * [createdGte, createdLt) (either end null: open), counted up to {@link LINK_VISIT_COUNT_CAP}
 * (a bounded read on the partial index, however many visits a busy link had).
 */
export async function countLinkVisits(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; createdGte?: Date | null | undefined; createdLt?: Date | null | undefined },
): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (
       SELECT 1 FROM payment_sessions s
        WHERE s.merchant_id = $1 AND s.livemode = $2
          AND ($3::timestamptz IS NULL OR s.created_at >= $3) AND ($4::timestamptz IS NULL OR s.created_at < $4)
          AND ${LINK_VISIT_WITHOUT_PAYMENT}
        LIMIT $5) v`,
    [params.merchantId, params.livemode, params.createdGte ?? null, params.createdLt ?? null, LINK_VISIT_COUNT_CAP + 1],
  );
  return rows[0]!.n;
}
