import { REFUND_COLUMNS } from './refund.ts';

/**
 * The SQL on `refunds` (pg-boss `plans.ts` style): each function returns the text of one
 * statement with `$n` parameters, documented in order. Reads join the refund's session (`s`) for
 * its chain, currency and decimals.
 */

/** One refund of a merchant and mode, optionally locked. $1 id, $2 merchant, $3 livemode. */
export const selectRefund = (options: { forUpdate?: boolean } = {}) =>
  `SELECT ${REFUND_COLUMNS} FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
    WHERE r.id = $1 AND r.merchant_id = $2 AND r.livemode = $3${options.forUpdate ? ' FOR UPDATE OF r' : ''}`;

/**
 * A page of a merchant's refunds, newest first. $1 merchant, $2 livemode, $3 payment or null,
 * $4 the refund the page starts after or null, $5 limit, $6 state or null.
 */
export const listRefunds = () =>
  `SELECT ${REFUND_COLUMNS} FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
    WHERE r.merchant_id = $1 AND r.livemode = $2 AND ($3::text IS NULL OR r.session_id = $3) AND ($6::text IS NULL OR r.status = $6)
      AND ($4::text IS NULL OR (r.created_at, r.id) < (SELECT created_at, id FROM refunds WHERE id = $4))
    ORDER BY r.created_at DESC, r.id DESC LIMIT $5`;

/** The total (`total`, text) of one session's refunds in some states. $1 session, $2 states. */
export const sumRefunds = () => `SELECT coalesce(sum(amount), 0)::text AS total FROM refunds WHERE session_id = $1 AND status = ANY($2::text[])`;

/** The states of every refund of one session. $1 session. */
export const selectRefundStates = () => `SELECT status FROM refunds WHERE session_id = $1`;

/**
 * The sender of a session's first counted transfer (`from_address`): where a refund goes by
 * default. $1 session.
 */
export const selectFirstPayer = () =>
  `SELECT from_address FROM transfers WHERE session_id = $1 AND status = 'observed' AND from_address IS NOT NULL ORDER BY block_number, log_index LIMIT 1`;

/** A new refund in state `requested`. $1 id, $2 merchant, $3 livemode, $4 session, $5 amount, $6 address, $7 reason, $8 metadata. */
export const insertRefund = () =>
  `INSERT INTO refunds (id, merchant_id, livemode, session_id, amount, to_address, reason, metadata) VALUES ($1, $2, $3, $4, $5::numeric, $6, $7, $8)`;

/**
 * How many refunds one transaction already completed to one address for one amount (each used
 * one of its matching transfers); address and amount null: any. $1 livemode, $2 chain, $3 tx
 * hash, $4 address or null, $5 amount or null.
 */
export const countRefundsPaidBy = () =>
  `SELECT count(*)::int AS used FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
    WHERE r.tx_hash = $3 AND r.livemode = $1 AND s.chain = $2 AND r.status = 'completed'
      AND ($4::text IS NULL OR r.to_address = $4) AND ($5::numeric IS NULL OR r.amount = $5::numeric)`;

/** Marks a refund completed. $1 id, $2 the merchant's refund transaction. */
export const markRefundCompleted = () => `UPDATE refunds SET status = 'completed', tx_hash = $2, completed_at = now(), updated_at = now() WHERE id = $1`;

/** Marks a refund rejected. $1 id, $2 reason or null. */
export const markRefundRejected = () => `UPDATE refunds SET status = 'rejected', rejection_reason = $2, rejected_at = now(), updated_at = now() WHERE id = $1`;

/** Flags one session's completed refunds not flagged yet, and returns them. $1 session, $2 reason. */
export const flagCompletedRefunds = () =>
  `UPDATE refunds r SET flagged_at = now(), flag_reason = $2, updated_at = now()
     FROM payment_sessions s
    WHERE s.id = r.session_id AND r.session_id = $1 AND r.status = 'completed' AND r.flagged_at IS NULL
    RETURNING ${REFUND_COLUMNS}`;
