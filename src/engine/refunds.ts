import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import { formatAmount } from '../internal/money.ts';
import { notFound } from '../internal/errors.ts';
import { appendEvent } from './outbox.ts';

/**
 * The refund model (one model, its SQL): the API writes refunds (src/api/refunds.ts), the engine
 * flags the ones a reorg left without confirmed money behind them. It lives here, below both,
 * because a lower stage never imports a surface.
 */

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
  flagged_at: Date | null;
  flag_reason: string | null;
  chain: ChainName;
  currency: Currency;
  decimals: number;
}

/** The columns of a refund and its session's chain, currency and decimals (`r` refunds, `s` sessions). */
export const REFUND_COLUMNS = `r.id, r.merchant_id, r.livemode, r.session_id, r.amount::text, r.status, r.to_address, r.reason, r.metadata, r.tx_hash,
  r.rejection_reason, r.created_at, r.updated_at, r.completed_at, r.rejected_at, r.flagged_at, r.flag_reason, s.chain, s.currency, s.decimals`;

/** A raw row (amount as text) as a RefundRow. */
export const toRefund = (raw: Record<string, unknown>): RefundRow => ({ ...(raw as unknown as RefundRow), amount: BigInt(raw.amount as string) });

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
    requiresAttention: row.flagged_at !== null,
    attentionReason: row.flag_reason,
    flaggedAt: row.flagged_at?.toISOString() ?? null,
    livemode: row.livemode,
    createdAt: row.created_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
    rejectedAt: row.rejected_at?.toISOString() ?? null,
  };
}

/** One refund of a merchant and mode (optionally locked); 404 otherwise. */
export async function loadRefund(sql: Sql, params: { merchantId: string; livemode: boolean; id: string; forUpdate?: boolean }): Promise<RefundRow> {
  const { rows } = await sql.query(
    `SELECT ${REFUND_COLUMNS} FROM refunds r JOIN payment_sessions s ON s.id = r.session_id
     WHERE r.id = $1 AND r.merchant_id = $2 AND r.livemode = $3 ${params.forUpdate ? 'FOR UPDATE OF r' : ''}`,
    [params.id, params.merchantId, params.livemode],
  );
  if (!rows[0]) throw notFound(`refund ${params.id} not found`);
  return toRefund(rows[0]);
}

/**
 * Called by the engine, in its transaction with the session row locked, when a reorg removed
 * money a session had counted: if its completed refunds now exceed its confirmed money, every
 * completed refund not flagged yet is flagged (`requiresAttention`, with the reason) and gets a
 * `refund.flagged` event. The merchant sent that money from its own wallet and the payment
 * behind it is gone: only the merchant can recover it, so the gateway says so loudly and
 * changes nothing else. Flags are never cleared.
 * @returns the refunds flagged now (empty when the refunds are still covered).
 */
export async function flagRefundsBeyondConfirmed(sql: Sql, params: { sessionId: string; confirmed: bigint; decimals: number; currency: string }): Promise<RefundRow[]> {
  const { rows: sums } = await sql.query<{ completed: string }>(
    `SELECT coalesce(sum(amount), 0)::text AS completed FROM refunds WHERE session_id = $1 AND status = 'completed'`,
    [params.sessionId],
  );
  const completed = BigInt(sums[0]!.completed);
  if (completed <= params.confirmed) return [];
  const text = (units: bigint) => `${formatAmount(units, params.decimals)} ${params.currency}`;
  const reason =
    `a reorg removed money this payment had received: it now holds ${text(params.confirmed)} of confirmed money, ` +
    `less than the ${text(completed)} already refunded; check the payment's transfers and recover the difference from the payer`;
  const { rows } = await sql.query(
    `UPDATE refunds r SET flagged_at = now(), flag_reason = $2, updated_at = now()
       FROM payment_sessions s
      WHERE s.id = r.session_id AND r.session_id = $1 AND r.status = 'completed' AND r.flagged_at IS NULL
      RETURNING ${REFUND_COLUMNS}`,
    [params.sessionId, reason],
  );
  const flagged = rows.map(toRefund).sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
  for (const refund of flagged) {
    await appendEvent(sql, { merchantId: refund.merchant_id, livemode: refund.livemode, type: 'refund.flagged', sessionId: refund.session_id, refundId: refund.id, data: refundView(refund) });
  }
  return flagged;
}
