import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { appendEvent } from '../engine/outbox.ts';
import { canonicalAddress, base58Bytes } from '../internal/addresses.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { newId } from '../internal/crypto.ts';
import { AmountError, formatAmount, parseAmount } from '../internal/money.ts';
import type { Currency } from '../internal/chains.ts';

/** A refund request as stored; money in base units. */
export interface RefundRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  session_id: string;
  amount: bigint;
  status: 'requested' | 'completed' | 'rejected';
  to_address: string;
  reason: string | null;
  metadata: Record<string, string>;
  tx_hash: string | null;
  rejection_reason: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  rejected_at: Date | null;
  chain: ChainName;
  currency: Currency;
  decimals: number;
}

const REFUND_COLUMNS = `r.id, r.merchant_id, r.livemode, r.session_id, r.amount::text, r.status, r.to_address, r.reason, r.metadata, r.tx_hash,
  r.rejection_reason, r.created_at, r.updated_at, r.completed_at, r.rejected_at, s.chain, s.currency, s.decimals`;

const toRefund = (raw: Record<string, unknown>): RefundRow => ({ ...(raw as unknown as RefundRow), amount: BigInt(raw.amount as string) });

/** The refund as the API and the `refund.*` events show it. */
export function refundView(row: RefundRow) {
  return {
    id: row.id,
    paymentId: row.session_id,
    amount: formatAmount(row.amount, row.decimals),
    amountBaseUnits: row.amount.toString(),
    currency: row.currency,
    chain: row.chain,
    status: row.status,
    address: row.to_address,
    reason: row.reason,
    metadata: row.metadata,
    txHash: row.tx_hash,
    rejectionReason: row.rejection_reason,
    livemode: row.livemode,
    createdAt: row.created_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
    rejectedAt: row.rejected_at?.toISOString() ?? null,
  };
}

/** A transaction hash in canonical form: 0x + 64 lower-case hex on EVM, a base58 64-byte signature on solana. */
export function canonicalTxHash(chain: ChainName, text: string): string | undefined {
  if (chain !== 'solana') return /^0x[0-9a-fA-F]{64}$/.test(text) ? text.toLowerCase() : undefined;
  try {
    return /^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(text) && base58Bytes(text).length === 64 ? text : undefined;
  } catch {
    return undefined;
  }
}

async function loadRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; forUpdate?: boolean }): Promise<RefundRow> {
  const { rows } = await sql.query(
    `SELECT ${REFUND_COLUMNS} FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
     WHERE r.id = $1 AND r.merchant_id = $2 AND r.livemode = $3 ${params.forUpdate ? 'FOR UPDATE OF r' : ''}`,
    [params.id, params.merchantId, params.livemode],
  );
  if (!rows[0]) throw notFound(`refund ${params.id} not found`);
  return toRefund(rows[0]);
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
 * States in which every counted transfer is confirmed, so `amount_received` is money that will
 * not vanish with a shallow reorg. `confirming` (money not yet confirmed) and `created`/`expired`
 * (nothing received) take no refunds.
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

/**
 * Creates a refund request for a payment, on `sql` (a transaction): the session row is locked so
 * concurrent requests cannot together refund more than was received. `amount` defaults to all
 * that is left; `address` defaults to the sender of the payment's first counted transfer.
 * Writes `refund.requested` in the same transaction.
 */
export async function requestRefund(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; paymentId: string; amount?: string | undefined; address?: string | undefined; reason?: string | undefined; metadata?: Record<string, string> | undefined },
): Promise<RefundRow> {
  const { rows } = await sql.query<{ chain: ChainName; currency: string; decimals: number; amount_received: string; status: string }>(
    `SELECT chain, currency, decimals, amount_received::text, status FROM payment_sessions WHERE id = $1 AND merchant_id = $2 AND livemode = $3 FOR UPDATE`,
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
  const received = BigInt(session.amount_received);
  const refundable = received - BigInt(sums[0]!.refunded);
  if (refundable <= 0n) {
    throw badRequest(
      received === 0n ? `payment ${params.paymentId} has received nothing to refund` : `payment ${params.paymentId} has nothing left to refund (received ${formatAmount(received, session.decimals)}, all of it already refunded or requested)`,
    );
  }
  let amount = refundable;
  if (params.amount !== undefined) {
    amount = parseRefundAmount(params.amount, session.decimals);
    if (amount > refundable) {
      throw badRequest(`amount ${params.amount} exceeds what can still be refunded: ${formatAmount(refundable, session.decimals)} ${session.currency}`);
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

/** Marks a requested refund completed with the hash of the merchant's refund transaction; writes `refund.completed`. */
export async function completeRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; txHash: string }): Promise<RefundRow> {
  const refund = await loadRefund(sql, { ...params, forUpdate: true });
  const txHash = canonicalTxHash(refund.chain, params.txHash);
  if (!txHash) {
    throw badRequest(refund.chain === 'solana' ? 'txHash must be a base58 transaction signature (64 bytes)' : 'txHash must be 0x followed by 64 hex digits');
  }
  if (refund.status !== 'requested') throw conflict(`refund ${params.id} is already ${refund.status}`);
  // Re-checked now, not only at request time: a reorg since then may have taken money away.
  const { rows: held } = await sql.query<{ status: string; received: string; completed: string }>(
    `SELECT s.status, s.amount_received::text AS received,
            (SELECT coalesce(sum(r.amount), 0)::text FROM refunds r WHERE r.session_id = s.id AND r.status = 'completed') AS completed
       FROM payment_sessions s WHERE s.id = $1 FOR UPDATE`,
    [refund.session_id],
  );
  const session = held[0]!;
  if (!REFUNDABLE_STATUSES.includes(session.status) || BigInt(session.completed) + refund.amount > BigInt(session.received)) {
    throw conflict(`refund ${params.id} can no longer be completed: its payment is ${session.status} and holds less confirmed money than the refunds (a reorg may have removed a transfer)`);
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
