import type { ChainName } from '../internal/config.ts';
import type { Currency } from '../internal/chains.ts';
import { formatAmount } from '../internal/money.ts';

/**
 * The refund model: one type, one column list, one mapper, and the view the API and the
 * `refund.*` events show. A refund is a merchant's promise to send money back from its own
 * wallet (the gateway never holds funds); its SQL is in refundSql.ts, its operations in
 * refunds.ts.
 */

/** A refund's states: requested by the merchant or the payer, then completed (paid, verified on chain) or rejected. */
export const REFUND_STATUSES = ['requested', 'completed', 'rejected'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/** A refund request as stored, with its payment's chain, currency and decimals; money in base units. */
export interface Refund {
  id: string;
  merchantId: string;
  livemode: boolean;
  /** The payment session refunded. */
  sessionId: string;
  amount: bigint;
  status: RefundStatus;
  /** Where the merchant sends the refund (canonical address on the session's chain). */
  toAddress: string;
  reason: string | null;
  metadata: Record<string, string>;
  /** The merchant's refund transaction, once completed. */
  txHash: string | null;
  rejectionReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  rejectedAt: Date | null;
  /** Set when a reorg left the completed refunds larger than the payment's confirmed money; never cleared. */
  flaggedAt: Date | null;
  flagReason: string | null;
  chain: ChainName;
  currency: Currency;
  decimals: number;
}

/** The column each {@link Refund} field is read from (`r` refunds, `s` its session). */
const FIELD_SQL: Record<keyof Refund, string> = {
  id: 'r.id',
  merchantId: 'r.merchant_id',
  livemode: 'r.livemode',
  sessionId: 'r.session_id',
  amount: 'r.amount::text',
  status: 'r.status',
  toAddress: 'r.to_address',
  reason: 'r.reason',
  metadata: 'r.metadata',
  txHash: 'r.tx_hash',
  rejectionReason: 'r.rejection_reason',
  createdAt: 'r.created_at',
  updatedAt: 'r.updated_at',
  completedAt: 'r.completed_at',
  rejectedAt: 'r.rejected_at',
  flaggedAt: 'r.flagged_at',
  flagReason: 'r.flag_reason',
  chain: 's.chain',
  currency: 's.currency',
  decimals: 's.decimals',
};

/** The select list of every refund query (`refunds r` joined to `payment_sessions s`), each column named after its field. */
export const REFUND_COLUMNS = Object.entries(FIELD_SQL)
  .map(([field, column]) => `${column} AS "${field}"`)
  .join(', ');

/** A row read with {@link REFUND_COLUMNS} as a refund (amount text becomes bigint). */
export const toRefund = (raw: Record<string, unknown>): Refund => ({ ...(raw as unknown as Refund), amount: BigInt(raw.amount as string) });

/** The refund as the API and the `refund.*` events show it. */
export function refundView(refund: Refund) {
  return {
    id: refund.id,
    paymentId: refund.sessionId,
    amount: formatAmount(refund.amount, refund.decimals),
    amountBaseUnits: refund.amount.toString(),
    currency: refund.currency,
    chain: refund.chain,
    status: refund.status,
    address: refund.toAddress,
    reason: refund.reason,
    metadata: refund.metadata,
    txHash: refund.txHash,
    rejectionReason: refund.rejectionReason,
    requiresAttention: refund.flaggedAt !== null,
    attentionReason: refund.flagReason,
    flaggedAt: refund.flaggedAt?.toISOString() ?? null,
    livemode: refund.livemode,
    createdAt: refund.createdAt.toISOString(),
    completedAt: refund.completedAt?.toISOString() ?? null,
    rejectedAt: refund.rejectedAt?.toISOString() ?? null,
  };
}
