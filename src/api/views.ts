import { payerReference, type Session } from '../payments/session.ts';
import { formatAmount } from '../internal/money.ts';
import { loadChains } from '../internal/chains.ts';
import { sessionX402Url } from '../x402/requirements.ts';
import { lineItemsView } from '../payments/purchase.ts';

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
  | 'createdAt'
  | 'expiresAt'
  | 'confirmedAt'
>;

function sessionFields(row: SessionViewFields, publicUrl: string) {
  const amount = formatAmount(row.amount, row.decimals);
  return {
    id: row.id,
    amount,
    displayAmount: amount,
    currency: row.currency,
    chain: row.chain,
    checkoutUrl: checkoutUrl(publicUrl, row.id),
    x402Url: sessionX402Url(publicUrl, row, loadChains()[row.chain]),
    paymentAddress: row.payTo,
    merchantWallet: row.payTo,
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
    receiptUrl: `${checkoutUrl(publicUrl, row.id)}/receipt`,
    livemode: row.livemode,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    confirmedAt: row.confirmedAt?.toISOString() ?? null,
  };
}

/** A session as Interface A shows it (spec §2.1 plus the payer's fields). */
export function sessionViewA(row: SessionViewFields, publicUrl: string) {
  return { ...sessionFields(row, publicUrl), status: row.status };
}

/** The same session as Interface B shows it (spec §2.2 plus the same extra fields). */
export function paymentViewB(row: SessionViewFields, publicUrl: string) {
  return { ...sessionFields(row, publicUrl), status: statusB(row.status) };
}
