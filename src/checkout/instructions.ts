import { loadChains, type ChainConfig } from '../internal/chains.ts';
import type { ChainName } from '../internal/config.ts';
import { formatAmount } from '../internal/money.ts';
import { instructionChainId, sandboxToken, sessionPaymentUri } from './uris.ts';
import { amountRemaining, checkoutViewOf, type CheckoutSession, type CheckoutView } from './view.ts';
import type { PaymentInstructions, InstructionToken } from './schema.ts';
import { payerAddress, payerReference } from '../payments/session.ts';
import { proofMessageTemplate } from './proofMessage.ts';
import { lineItemsView } from '../payments/purchase.ts';
import { supportUrlFor } from '../accounts/brand.ts';

/** Names people know the chains by, for the page and the instructions. */
export const CHAIN_DISPLAY_NAMES: Record<ChainName, string> = {
  polygon: 'Polygon',
  solana: 'Solana',
  base: 'Base',
  bsc: 'BNB Smart Chain',
  arbitrum: 'Arbitrum One',
  optimism: 'OP Mainnet',
};

/** Views in which paying (more) is what the payer should do. */
const PAYABLE_VIEWS: readonly CheckoutView[] = ['awaiting', 'detected', 'underpaid'];

/** Views in which a payer who sent money can ask for it back. */
const REFUNDABLE_VIEWS: readonly CheckoutView[] = ['paid', 'failed'];

/** Only http(s) URLs are followed after payment; anything else (javascript:, data:) is dropped. */
function httpUrlOrNull(text: string | null): string | null {
  if (!text) return null;
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** The public URLs of one session's checkout resources. */
export function checkoutUrls(publicUrl: string, sessionId: string) {
  const base = `${publicUrl}/checkout/${encodeURIComponent(sessionId)}`;
  return {
    checkoutUrl: base,
    statusUrl: `${base}/status`,
    eventsUrl: `${base}/events`,
    refundUrl: `${base}/refund`,
    proofUrl: `${base}/transactions`,
    receiptUrl: `${base}/receipt`,
  };
}

/** Whether the page offers the refund form: confirmed money arrived and the session is over. */
export function refundable(session: CheckoutSession): boolean {
  return session.amountReceived > 0n && REFUNDABLE_VIEWS.includes(checkoutViewOf(session));
}

function paymentUri(chain: ChainConfig, session: CheckoutSession, token: string, baseUnits: bigint): string {
  return sessionPaymentUri({
    chain,
    livemode: session.livemode,
    token,
    recipient: payerAddress(session),
    baseUnits,
    amount: formatAmount(baseUnits, session.decimals),
    reference: payerReference(session),
    label: session.merchantName,
    message: `Payment ${session.id}`,
  });
}

/**
 * The machine-readable payment instructions of a session: everything an agent needs to pay
 * without scraping the page (chain, token, recipient, exact amount in base units and decimal
 * text, a ready wallet URI, expiry, where to watch the status). The page renders from the same
 * object, so the two cannot disagree.
 */
export function buildInstructions(
  session: CheckoutSession,
  params: {
    publicUrl: string;
    /** The session's x402 resource, or null: decided by the x402 stage (enabled on the chain?), which the daemon wires in. */
    x402Url: string | null;
    chains?: Record<ChainName, ChainConfig>;
  },
): PaymentInstructions {
  const chain = (params.chains ?? loadChains())[session.chain];
  const view = checkoutViewOf(session);
  const remaining = amountRemaining(session);
  const payable = PAYABLE_VIEWS.includes(view) && remaining > 0n;
  const urls = checkoutUrls(params.publicUrl, session.id);
  const decimal = (units: bigint) => formatAmount(units, session.decimals);

  const tokens: InstructionToken[] = session.tokenAddresses.map((address) => {
    const config = chain.tokens.find((token) => token.address === address);
    return {
      symbol: config?.symbol ?? session.currency,
      // Sandbox: the fake token its URI names too, never the real contract or mint.
      address: session.livemode ? address : sandboxToken(chain, address),
      decimals: config?.decimals ?? session.decimals,
      standard: chain.kind === 'solana' ? 'spl' : 'erc20',
      tokenProgram: config?.tokenProgram ?? null,
      paymentUri: payable ? paymentUri(chain, session, address, remaining) : null,
    };
  });
  const primary = tokens[0]!;
  const secondsToExpiry = Math.max(0, Math.floor((session.expiresAt.getTime() - session.now.getTime()) / 1000));

  return {
    object: 'payment_instructions',
    id: session.id,
    status: session.status,
    view,
    livemode: session.livemode,
    merchant: {
      name: session.merchantName,
      // Versioned by the logo's hash: a changed logo is a new URL, so the old one may be cached for good.
      logoUrl: session.merchantBrand.logoSha256 ? `${urls.checkoutUrl}/logo?v=${session.merchantBrand.logoSha256.slice(0, 16)}` : null,
      accentColor: session.merchantBrand.accentColor,
      supportEmail: session.merchantBrand.supportEmail,
      supportUrl: supportUrlFor(session.merchantBrand, session.livemode),
    },
    description: session.description,
    lineItems: lineItemsView(session.lineItems, session.decimals),
    price: session.price,
    priceQuote: session.priceQuote,
    cancelUrl: httpUrlOrNull(session.cancelUrl),
    receiptUrl: urls.receiptUrl,
    chain: session.chain,
    chainName: CHAIN_DISPLAY_NAMES[session.chain],
    chainKind: chain.kind,
    chainId: instructionChainId(chain, session.livemode),
    currency: session.currency,
    decimals: session.decimals,
    token: primary,
    acceptedTokens: tokens,
    recipient: payerAddress(session),
    attribution: session.attribution,
    reference: payerReference(session),
    amount: decimal(session.amount),
    amountBaseUnits: session.amount.toString(),
    amountDue: decimal(session.amountDue),
    amountDueBaseUnits: session.amountDue.toString(),
    amountReceived: decimal(session.amountReceived),
    amountReceivedBaseUnits: session.amountReceived.toString(),
    amountPending: decimal(session.amountPending),
    amountPendingBaseUnits: session.amountPending.toString(),
    amountRemaining: decimal(remaining),
    amountRemainingBaseUnits: remaining.toString(),
    paymentUri: primary.paymentUri,
    payable,
    txHash: session.txHash,
    confirmations: session.confirmations,
    requiredConfirmations: session.requiredConfirmations,
    createdAt: session.createdAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
    serverTime: session.now.toISOString(),
    secondsToExpiry,
    confirmedAt: session.confirmedAt?.toISOString() ?? null,
    successUrl: httpUrlOrNull(session.successUrl),
    checkoutUrl: urls.checkoutUrl,
    statusUrl: urls.statusUrl,
    eventsUrl: urls.eventsUrl,
    // Sandbox sessions have no chain to prove a transaction on (POST /sandbox/sessions/{id}/pay pays
    // them); a deposit address needs no proof: every transfer to it is the session's.
    proofUrl: session.livemode && session.attribution === 'amount' ? urls.proofUrl : null,
    proofMessage:
      session.livemode && session.attribution === 'amount'
        ? proofMessageTemplate({ gateway: params.publicUrl, sessionId: session.id, chain: session.chain })
        : null,
    refundUrl: refundable(session) ? urls.refundUrl : null,
    x402Url: params.x402Url,
  };
}

/** The part of the instructions that changes while the payer waits: what the live feed sends. */
export function statusOf(instructions: PaymentInstructions) {
  const {
    id,
    status,
    view,
    amountReceived,
    amountReceivedBaseUnits,
    amountPending,
    amountPendingBaseUnits,
    amountRemaining,
    amountRemainingBaseUnits,
    paymentUri,
    payable,
  } = instructions;
  const { txHash, confirmations, requiredConfirmations, expiresAt, serverTime, secondsToExpiry, confirmedAt, successUrl, refundUrl } = instructions;
  return {
    object: 'payment_status' as const,
    id,
    status,
    view,
    amountReceived,
    amountReceivedBaseUnits,
    amountPending,
    amountPendingBaseUnits,
    amountRemaining,
    amountRemainingBaseUnits,
    paymentUri,
    payable,
    txHash,
    confirmations,
    requiredConfirmations,
    expiresAt,
    serverTime,
    secondsToExpiry,
    confirmedAt,
    successUrl,
    refundUrl,
  };
}
