import type { PendingChoice } from '../payments/choices.ts';
import { choiceExpired } from '../payments/choices.ts';
import { formatAmount, parseAmount } from '../internal/money.ts';
import { checkoutUrl, statusB, type SessionLinks } from './views.ts';

/**
 * A session waiting for its customer's choice (src/payments/choices.ts) as both interfaces show
 * it: the same fields as a chosen session's, with what depends on the pair null (`chain`,
 * `currency`, `amount`, where and how much to pay, the fee) and `choice` null. Its status is
 * `created` (Interface B: `pending`) until it expires, then `expired`.
 */
function pendingFields(choice: PendingChoice, links: SessionLinks) {
  const terms = choice.terms;
  return {
    id: choice.id,
    amount: null,
    displayAmount: null,
    currency: null,
    chain: null,
    checkoutUrl: checkoutUrl(links.publicUrl, choice.id),
    x402Url: links.x402PendingUrl?.(choice) ?? null,
    paymentAddress: null,
    merchantWallet: null,
    attribution: null,
    depositAddress: null,
    amountDue: null,
    amountDueBaseUnits: null,
    amountReceived: '0',
    amountPending: '0',
    decimals: null,
    tokens: [],
    fee: null,
    feeBaseUnits: null,
    reference: null,
    txHash: null,
    confirmations: 0,
    requiredConfirmations: null,
    metadata: terms.metadata ?? {},
    webhookUrl: terms.webhookUrl ?? null,
    successUrl: terms.successUrl ?? null,
    paymentLinkId: terms.paymentLinkId ?? null,
    description: terms.description ?? null,
    // Checked at creation against every option; shown in token units as given (18 decimals read every stablecoin's).
    lineItems:
      terms.lineItems?.map((item) => ({
        name: item.name,
        quantity: item.quantity,
        unitAmount: formatAmount(parseAmount(item.unitAmount, 18), 18),
        amount: formatAmount(parseAmount(item.unitAmount, 18) * BigInt(item.quantity), 18),
      })) ?? null,
    cancelUrl: terms.cancelUrl ?? null,
    // A fiat price is converted for the chosen pair at the choice: the quote exists from then on.
    price: choice.price ?? null,
    priceQuote: null,
    paymentOptions: choice.paymentOptions,
    choice: null,
    receiptUrl: `${checkoutUrl(links.publicUrl, choice.id)}/receipt`,
    livemode: choice.livemode,
    createdAt: choice.createdAt.toISOString(),
    expiresAt: choice.expiresAt.toISOString(),
    confirmedAt: null,
  };
}

/** Interface A's view of a waiting session. */
export function pendingViewA(choice: PendingChoice, links: SessionLinks) {
  return { ...pendingFields(choice, links), status: choiceExpired(choice) ? 'expired' : 'created' };
}

/** Interface B's view of a waiting session. */
export function pendingViewB(choice: PendingChoice, links: SessionLinks) {
  return { ...pendingFields(choice, links), status: statusB(choiceExpired(choice) ? 'expired' : 'created') };
}
