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
  /** Confirmed money: counted transfers that meet the chain's confirmation rule. */
  amountReceived: bigint;
  /** Counted transfers seen on chain that do not meet the confirmation rule yet. */
  amountPending: bigint;
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
 * livemode. `amountReceived` is confirmed money only and `amountPending` what is seen on chain
 * but not confirmed yet (docs/security.md, "Refunds count only confirmed money").
 * `amountRemaining` is present while the two together are less than the due amount (what the
 * payer still has to send: underpaid, failed); `amountExcess` while confirmed money is more
 * (overpaid: the excess that can be refunded). Amounts are decimal text.
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
    amountPending: text(view.amountPending),
    fee: text(view.fee),
    paymentAddress: view.payTo,
    confirmations: view.confirmations,
    expiresAt: view.expiresAt.toISOString(),
    metadata: view.metadata,
    livemode: view.livemode,
  };
  const seen = view.amountReceived + view.amountPending;
  if (seen < view.amountDue) data.amountRemaining = text(view.amountDue - seen);
  if (view.amountReceived > view.amountDue) data.amountExcess = text(view.amountReceived - view.amountDue);
  if (view.status === 'failed' && view.failureReason) data.failureReason = view.failureReason;
  return data;
}
