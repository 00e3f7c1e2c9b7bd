import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { appendEvent } from '../engine/outbox.ts';
import { loadRefund, REFUND_COLUMNS, refundView, toRefund, type RefundRow } from '../engine/refunds.ts';
import { canonicalAddress, base58Bytes } from '../internal/addresses.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { newId } from '../internal/crypto.ts';
import { AmountError, formatAmount, parseAmount } from '../internal/money.ts';

export { refundView, type RefundRow } from '../engine/refunds.ts';

/** A transaction hash in canonical form: 0x + 64 lower-case hex on EVM, a base58 64-byte signature on solana. */
export function canonicalTxHash(chain: ChainName, text: string): string | undefined {
  if (chain !== 'solana') return /^0x[0-9a-fA-F]{64}$/.test(text) ? text.toLowerCase() : undefined;
  try {
    return /^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(text) && base58Bytes(text).length === 64 ? text : undefined;
  } catch {
    return undefined;
  }
}

/** One refund of the caller's merchant and mode; 404 otherwise. */
export function getRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string }): Promise<RefundRow> {
  return loadRefund(sql, params);
}

/** Newest first; optionally one payment's refunds. */
export async function listRefunds(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; paymentId?: string | undefined; startingAfter?: string | undefined; limit: number },
): Promise<RefundRow[]> {
  const { rows } = await sql.query(
    `SELECT ${REFUND_COLUMNS} FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
     WHERE r.merchant_id = $1 AND r.livemode = $2 AND ($3::text IS NULL OR r.session_id = $3)
       AND ($4::text IS NULL OR (r.created_at, r.id) < (SELECT created_at, id FROM refunds WHERE id = $4))
     ORDER BY r.created_at DESC, r.id DESC LIMIT $5`,
    [params.merchantId, params.livemode, params.paymentId ?? null, params.startingAfter ?? null, params.limit],
  );
  return rows.map(toRefund);
}

/**
 * States in which a payment can take refunds. `confirming` (its money may still vanish in a
 * reorg) and `created`/`expired` (nothing received) take none. Within these, refunds are bounded
 * by confirmed money (`amount_confirmed`, the API's `amountReceived`), never by money that is only
 * seen: a second payment to a confirmed session is pending until it confirms.
 */
export const REFUNDABLE_STATUSES = ['confirmed', 'settled', 'pending', 'failed'];

/** A refund amount: positive decimal text with no more decimals than the token (no minimum: sub-cent remainders can be refunded). */
function parseRefundAmount(text: string, decimals: number): bigint {
  let amount: bigint;
  try {
    amount = parseAmount(text, decimals);
  } catch (error) {
    if (error instanceof AmountError) throw badRequest(error.message);
    throw error;
  }
  if (amount <= 0n) throw badRequest('amount must be greater than 0');
  return amount;
}

/** `12.5 USDC`. */
const money = (units: bigint, session: { decimals: number; currency: string }) => `${formatAmount(units, session.decimals)} ${session.currency}`;

/**
 * Creates a refund request for a payment, on `sql` (a transaction): the session row is locked so
 * concurrent requests cannot together refund more than was received and confirmed. `amount`
 * defaults to all the confirmed money not yet refunded or requested; `address` defaults to the
 * sender of the payment's first counted transfer. Writes `refund.requested` in the same
 * transaction. 409 when what is asked is only covered once pending money confirms.
 */
export async function requestRefund(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; paymentId: string; amount?: string | undefined; address?: string | undefined; reason?: string | undefined; metadata?: Record<string, string> | undefined },
): Promise<RefundRow> {
  const { rows } = await sql.query<{ chain: ChainName; currency: string; decimals: number; amount_received: string; amount_confirmed: string; status: string }>(
    `SELECT chain, currency, decimals, amount_received::text, amount_confirmed::text, status FROM payment_sessions
      WHERE id = $1 AND merchant_id = $2 AND livemode = $3 FOR UPDATE`,
    [params.paymentId, params.merchantId, params.livemode],
  );
  const session = rows[0];
  if (!session) throw notFound(`payment ${params.paymentId} not found`);
  if (!REFUNDABLE_STATUSES.includes(session.status)) {
    // No state names: the route serves both interfaces, and Interface B calls `created` `pending`.
    throw conflict(`payment ${params.paymentId} has no confirmed money to refund: refunds are possible once money it received is confirmed (a confirmed, settled or underpaid payment)`);
  }
  const { rows: sums } = await sql.query<{ refunded: string }>(
    `SELECT coalesce(sum(amount), 0)::text AS refunded FROM refunds WHERE session_id = $1 AND status IN ('requested', 'completed')`,
    [params.paymentId],
  );
  const confirmed = BigInt(session.amount_confirmed);
  const seen = BigInt(session.amount_received);
  const pending = seen > confirmed ? seen - confirmed : 0n;
  const refundable = confirmed - BigInt(sums[0]!.refunded);
  const pendingNote = `${money(pending, session)} more has been seen on chain but is not confirmed yet; it becomes refundable once it is`;
  if (refundable <= 0n) {
    if (pending > 0n) throw conflict(`payment ${params.paymentId} has no confirmed money left to refund: ${pendingNote}`);
    throw badRequest(
      confirmed === 0n ? `payment ${params.paymentId} has received nothing to refund` : `payment ${params.paymentId} has nothing left to refund (received ${formatAmount(confirmed, session.decimals)}, all of it already refunded or requested)`,
    );
  }
  let amount = refundable;
  if (params.amount !== undefined) {
    amount = parseRefundAmount(params.amount, session.decimals);
    if (amount > refundable && amount <= refundable + pending) {
      throw conflict(`amount ${params.amount} exceeds the confirmed money that can still be refunded: ${money(refundable, session)}; ${pendingNote}`);
    }
    if (amount > refundable) {
      throw badRequest(`amount ${params.amount} exceeds what can still be refunded: ${money(refundable, session)}`);
    }
  }
  let address: string | undefined;
  if (params.address !== undefined) {
    address = canonicalAddress(session.chain, params.address);
    if (!address) throw badRequest(`address ${JSON.stringify(params.address)} is not a valid ${session.chain} address`);
  } else {
    const { rows: senders } = await sql.query<{ from_address: string | null }>(
      `SELECT from_address FROM transfers WHERE session_id = $1 AND status = 'observed' AND from_address IS NOT NULL ORDER BY block_number, log_index LIMIT 1`,
      [params.paymentId],
    );
    address = senders[0]?.from_address ? canonicalAddress(session.chain, senders[0].from_address) : undefined;
    if (!address) throw badRequest('address is required: the payer\'s address is not known for this payment');
  }
  const id = newId('rfd');
  await sql.query(
    `INSERT INTO refunds (id, merchant_id, livemode, session_id, amount, to_address, reason, metadata) VALUES ($1, $2, $3, $4, $5::numeric, $6, $7, $8)`,
    [id, params.merchantId, params.livemode, params.paymentId, amount.toString(), address, params.reason ?? null, params.metadata ?? {}],
  );
  const refund = await loadRefund(sql, { merchantId: params.merchantId, livemode: params.livemode, id });
  await appendEvent(sql, { merchantId: params.merchantId, livemode: params.livemode, type: 'refund.requested', sessionId: params.paymentId, refundId: id, data: refundView(refund) });
  return refund;
}

/**
 * Marks a requested refund completed with the hash of the merchant's refund transaction; writes
 * `refund.completed`. 409 unless the payment's confirmed money covers every completed refund with
 * this one: checked now, not only at request time, since a reorg may have taken money away.
 * Locks the session before the refund, in the order requests and the engine use.
 */
export async function completeRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; txHash: string }): Promise<RefundRow> {
  const { session_id: sessionId } = await loadRefund(sql, params);
  const { rows: held } = await sql.query<{ status: string; confirmed: string }>(
    'SELECT status, amount_confirmed::text AS confirmed FROM payment_sessions WHERE id = $1 FOR UPDATE',
    [sessionId],
  );
  const refund = await loadRefund(sql, { ...params, forUpdate: true });
  const txHash = canonicalTxHash(refund.chain, params.txHash);
  if (!txHash) {
    throw badRequest(refund.chain === 'solana' ? 'txHash must be a base58 transaction signature (64 bytes)' : 'txHash must be 0x followed by 64 hex digits');
  }
  if (refund.status !== 'requested') throw conflict(`refund ${params.id} is already ${refund.status}`);
  const session = held[0]!;
  if (!REFUNDABLE_STATUSES.includes(session.status)) {
    throw conflict(`refund ${params.id} can no longer be completed: its payment is ${session.status} and holds less confirmed money than the refunds (a reorg may have removed a transfer)`);
  }
  const { rows: sums } = await sql.query<{ completed: string }>(
    `SELECT coalesce(sum(amount), 0)::text AS completed FROM refunds WHERE session_id = $1 AND status = 'completed'`,
    [sessionId],
  );
  const confirmed = BigInt(session.confirmed);
  const completed = BigInt(sums[0]!.completed);
  if (completed + refund.amount > confirmed) {
    const left = confirmed > completed ? confirmed - completed : 0n;
    throw conflict(
      `refund ${params.id} of ${money(refund.amount, refund)} cannot be completed: its payment holds ${money(confirmed, refund)} of confirmed money, ` +
        `${money(completed, refund)} of it already refunded, so at most ${money(left, refund)} more can be (money not confirmed yet counts once it is; a reorg may have removed a transfer)`,
    );
  }
  await sql.query(`UPDATE refunds SET status = 'completed', tx_hash = $2, completed_at = now(), updated_at = now() WHERE id = $1`, [params.id, txHash]);
  const updated = await loadRefund(sql, params);
  await appendEvent(sql, { merchantId: params.merchantId, livemode: params.livemode, type: 'refund.completed', sessionId: updated.session_id, refundId: updated.id, data: refundView(updated) });
  return updated;
}

/** Declines a requested refund (its amount becomes refundable again); writes `refund.rejected`. */
export async function rejectRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; reason?: string | undefined }): Promise<RefundRow> {
  const refund = await loadRefund(sql, { ...params, forUpdate: true });
  if (refund.status !== 'requested') throw conflict(`refund ${params.id} is already ${refund.status}`);
  await sql.query(`UPDATE refunds SET status = 'rejected', rejection_reason = $2, rejected_at = now(), updated_at = now() WHERE id = $1`, [params.id, params.reason ?? null]);
  const updated = await loadRefund(sql, params);
  await appendEvent(sql, { merchantId: params.merchantId, livemode: params.livemode, type: 'refund.rejected', sessionId: updated.session_id, refundId: updated.id, data: refundView(updated) });
  return updated;
}
