import { formatAmount } from '../internal/money.ts';
import { payerAddress, type Session } from '../payments/session.ts';
import { lineItemsView } from '../payments/purchase.ts';

/** The session fields that payment events carry. */
export type PaymentView = Pick<
  Session,
  | 'id'
  | 'livemode'
  | 'status'
  | 'chain'
  | 'currency'
  | 'decimals'
  | 'amount'
  | 'amountDue'
  | 'amountReceived'
  | 'amountPending'
  | 'fee'
  | 'payTo'
  | 'depositAddress'
  | 'txHash'
  | 'confirmations'
  | 'confirmedAt'
  | 'expiresAt'
  | 'failureReason'
  | 'metadata'
  | 'description'
  | 'lineItems'
  | 'price'
  | 'priceQuote'
>;

/**
 * The `data` of every payment event, defined once (spec §6.2: id, amount, currency, chain,
 * status, txHash, confirmedAt), plus what a merchant needs to act without a second request:
 * the exact due and received amounts, the fee, where to pay (`paymentAddress`: the session's deposit
 * address in `address` mode, with `depositAddress` and `merchantWallet` then, the merchant's wallet otherwise), live confirmations, the session's metadata, what was bought (`description`, `lineItems`, null
 * when not given) and livemode. `amountReceived` is confirmed money only and `amountPending` what is seen on chain
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
    paymentAddress: payerAddress(view),
    confirmations: view.confirmations,
    expiresAt: view.expiresAt.toISOString(),
    metadata: view.metadata,
    description: view.description,
    lineItems: lineItemsView(view.lineItems, view.decimals),
    // The fiat price the amount was converted from and how (issue 26), null for token amounts.
    price: view.price,
    priceQuote: view.priceQuote,
    livemode: view.livemode,
  };
  // `address` mode only, so `amount` mode events keep their exact shape.
  if (view.depositAddress) {
    data.depositAddress = view.depositAddress;
    data.merchantWallet = view.payTo;
  }
  const seen = view.amountReceived + view.amountPending;
  if (seen < view.amountDue) data.amountRemaining = text(view.amountDue - seen);
  if (view.amountReceived > view.amountDue) data.amountExcess = text(view.amountReceived - view.amountDue);
  if (view.status === 'failed' && view.failureReason) data.failureReason = view.failureReason;
  return data;
}
