import { payerAddress, payerReference, type Session } from '../payments/session.ts';
import { formatAmount, formatDisplayAmount } from '../internal/money.ts';
import { loadChains } from '../internal/chains.ts';
import { lineItemsView } from '../payments/purchase.ts';
import { optionsOf } from '../payments/options.ts';
import type { PendingChoice } from '../payments/choices.ts';

/**
 * Interface B reports the session state `created` as `pending` (spec §3: "a newly created
 * payment in Interface B reports pending"); every other state reads the same in both.
 */
export function statusB(status: string): string {
  return status === 'created' ? 'pending' : status;
}

/** `${publicUrl}/checkout/<id>`: the hosted page (built by the checkout stage). */
export function checkoutUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl}/checkout/${sessionId}`;
}

function tokensOf(row: Pick<Session, 'chain' | 'currency' | 'tokenAddresses'>): { symbol: string; address: string }[] {
  const chain = loadChains()[row.chain];
  return row.tokenAddresses.map((address) => ({ symbol: chain.tokens.find((token) => token.address === address)?.symbol ?? row.currency, address }));
}

/** What both interfaces read of a session. */
export type SessionViewFields = Pick<
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
  | 'tokenAddresses'
  | 'payTo'
  | 'attribution'
  | 'depositAddress'
  | 'reference'
  | 'txHash'
  | 'confirmations'
  | 'requiredConfirmations'
  | 'metadata'
  | 'webhookUrl'
  | 'successUrl'
  | 'paymentLinkId'
  | 'description'
  | 'lineItems'
  | 'cancelUrl'
  | 'price'
  | 'priceQuote'
  | 'paymentOptions'
  | 'createdAt'
  | 'expiresAt'
  | 'confirmedAt'
>;

/**
 * The links a session view carries: the public base URL (read per request: with PORT=0 it is
 * only known once the server listens) and the session's x402 resource, which the x402 stage
 * gives only where it can take the payment (null without x402 in this process).
 */
export interface SessionLinks {
  publicUrl: string;
  x402Url(row: SessionViewFields): string | null;
  /** A waiting session's x402 resource, where x402 can pay one of its options here (choiceViews.ts). */
  x402PendingUrl?(choice: PendingChoice): string | null;
}

/** The links of `deps`' sessions: {@link SessionLinks}. */
export function sessionLinks(deps: {
  config: { publicUrl: string };
  x402?: { urlOf(row: SessionViewFields): string | null; pendingUrlOf(choice: PendingChoice): string | null } | undefined;
}): SessionLinks {
  return {
    publicUrl: deps.config.publicUrl,
    x402Url: (row) => deps.x402?.urlOf(row) ?? null,
    x402PendingUrl: (choice) => deps.x402?.pendingUrlOf(choice) ?? null,
  };
}

function sessionFields(row: SessionViewFields, links: SessionLinks) {
  const publicUrl = links.publicUrl;
  const amount = formatAmount(row.amount, row.decimals);
  return {
    id: row.id,
    amount,
    displayAmount: formatDisplayAmount(row.amount, row.decimals),
    currency: row.currency,
    chain: row.chain,
    checkoutUrl: checkoutUrl(publicUrl, row.id),
    x402Url: links.x402Url(row),
    paymentAddress: payerAddress(row),
    merchantWallet: row.payTo,
    attribution: row.attribution,
    depositAddress: row.depositAddress,
    amountDue: formatAmount(row.amountDue, row.decimals),
    amountDueBaseUnits: row.amountDue.toString(),
    amountReceived: formatAmount(row.amountReceived, row.decimals),
    amountPending: formatAmount(row.amountPending, row.decimals),
    decimals: row.decimals,
    tokens: tokensOf(row),
    fee: formatAmount(row.fee, row.decimals),
    feeBaseUnits: row.fee.toString(),
    reference: payerReference(row),
    txHash: row.txHash,
    confirmations: row.confirmations,
    requiredConfirmations: row.requiredConfirmations,
    metadata: row.metadata,
    webhookUrl: row.webhookUrl,
    successUrl: row.successUrl,
    paymentLinkId: row.paymentLinkId,
    description: row.description,
    lineItems: lineItemsView(row.lineItems, row.decimals),
    cancelUrl: row.cancelUrl,
    price: row.price,
    priceQuote: row.priceQuote,
    paymentOptions: optionsOf(row),
    choice: { chain: row.chain, currency: row.currency },
    receiptUrl: `${checkoutUrl(publicUrl, row.id)}/receipt`,
    livemode: row.livemode,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    confirmedAt: row.confirmedAt?.toISOString() ?? null,
  };
}

/** A session as Interface A shows it (spec §2.1 plus the payer's fields). */
export function sessionViewA(row: SessionViewFields, links: SessionLinks) {
  return { ...sessionFields(row, links), status: row.status };
}

/** The same session as Interface B shows it (spec §2.2 plus the same extra fields). */
export function paymentViewB(row: SessionViewFields, links: SessionLinks) {
  return { ...sessionFields(row, links), status: statusB(row.status) };
}
