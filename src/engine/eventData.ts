import { formatAmount } from '../internal/money.ts';
import type { PaymentStatus } from './stateMachine.ts';

/** The session fields that payment events carry (camelCase view of a payment_sessions row). */
export interface PaymentView {
  id: string;
  livemode: boolean;
  status: PaymentStatus;
  chain: string;
  currency: string;
  decimals: number;
  amount: bigint;
  amountDue: bigint;
  amountReceived: bigint;
  fee: bigint;
  payTo: string;
  txHash: string | null;
  confirmations: number;
  confirmedAt: Date | null;
  expiresAt: Date;
  failureReason: string | null;
  metadata: Record<string, string>;
}

/**
 * The `data` of every payment event, defined once (spec §6.2: id, amount, currency, chain,
 * status, txHash, confirmedAt), plus what a merchant needs to act without a second request:
 * the exact due and received amounts, the fee, live confirmations, the session's metadata and
 * livemode. `amountRemaining` is present while less than the due amount has been received
 * (underpaid, failed); `amountExcess` when more (overpaid). Amounts are decimal text.
 */
export function paymentEventData(view: PaymentView): Record<string, unknown> {
  const text = (units: bigint) => formatAmount(units, view.decimals);
  const data: Record<string, unknown> = {
    id: view.id,
    amount: text(view.amount),
    currency: view.currency,
    chain: view.chain,
    status: view.status,
    txHash: view.txHash,
    confirmedAt: view.confirmedAt ? view.confirmedAt.toISOString() : null,
    amountDue: text(view.amountDue),
    amountReceived: text(view.amountReceived),
    fee: text(view.fee),
    paymentAddress: view.payTo,
    confirmations: view.confirmations,
    expiresAt: view.expiresAt.toISOString(),
    metadata: view.metadata,
    livemode: view.livemode,
  };
  if (view.amountReceived < view.amountDue) data.amountRemaining = text(view.amountDue - view.amountReceived);
  if (view.amountReceived > view.amountDue) data.amountExcess = text(view.amountReceived - view.amountDue);
  if (view.status === 'failed' && view.failureReason) data.failureReason = view.failureReason;
  return data;
}
