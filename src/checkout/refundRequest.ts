import type { Store } from '../store/index.ts';
import { loadChains } from '../internal/chains.ts';
import { canonicalAddress } from '../internal/addresses.ts';
import { badRequest, conflict, notFound, RateLimitedError } from '../internal/errors.ts';
import { formatAmount } from '../internal/money.ts';
import { checkReceivingWallet } from '../payments/terms.ts';
import { refundStatesOf, requestRefund } from '../payments/refunds.ts';
import { getSessionById } from '../payments/sessions.ts';
import { loadCheckoutSession } from './view.ts';
import { refundable } from './instructions.ts';

/**
 * Refund requests a payer may make for one session, counting rejected ones: with the rule of
 * one open request at a time this stops a page from flooding a merchant, without any
 * per-process state (the rows themselves are the counter, so it holds across processes).
 */
export const MAX_REFUND_REQUESTS_PER_SESSION = 3;

/** What the payer sent, as received (validated here). */
export interface RefundRequestInput {
  destination: string;
  reason?: string | undefined;
  email?: string | undefined;
}

/** The recorded request, as the page's endpoint answers it. */
export interface RefundRequestResult {
  object: 'refund_request';
  id: string;
  sessionId: string;
  status: 'requested';
  amount: string;
  amountBaseUnits: string;
  currency: string;
  chain: string;
  destination: string;
  createdAt: string;
}

/**
 * Records a payer's refund request for a session (non-custodial: the merchant decides and sends
 * the refund from its own wallet) and the `refund.requested` event for the merchant, in one
 * transaction, through the domain's `requestRefund` (one refund model, one event shape). The
 * amount is all the session's confirmed money not yet refunded (money still pending confirmation
 * is not refundable). Refused with a 4xx that changes nothing when the session has no confirmed
 * money or is still open, the destination is not an address on the session's chain, is one no
 * one can spend from (the receiving-wallet check: burn addresses, program ids, the token's own
 * contract or mint, sandbox fakes) or is the merchant's own wallet, a request is already open,
 * or the session has used up its requests.
 */
export async function requestRefundFromCheckout(store: Store, sessionId: string, input: RefundRequestInput): Promise<RefundRequestResult> {
  return store.transaction(async (sql) => {
    // Lock the session so two concurrent requests cannot both pass the "one open request" check.
    const locked = await getSessionById(sql, { id: sessionId, fields: ['id'], forUpdate: true });
    const session = locked ? await loadCheckoutSession(sql, sessionId) : undefined;
    if (!session) throw notFound(`no checkout session ${sessionId}`);
    if (!refundable(session)) {
      throw conflict(
        session.amountReceived === 0n && session.amountPending === 0n
          ? 'nothing has been received for this payment, so there is nothing to refund'
          : 'a refund can be requested once the payment is confirmed or has expired',
      );
    }
    const text = input.destination.trim();
    if (canonicalAddress(session.chain, text) === session.payTo)
      throw badRequest("destination is the merchant's own wallet; give the address the refund should go to");
    // The same check as a receiving wallet's: a refund sent where no one holds the key is lost.
    const destination = checkReceivingWallet(loadChains()[session.chain], text, 'destination');

    const previous = await refundStatesOf(sql, sessionId);
    if (previous.includes('requested')) throw conflict('a refund request for this payment is already open; the merchant will answer it');
    if (previous.length >= MAX_REFUND_REQUESTS_PER_SESSION) {
      throw new RateLimitedError(`at most ${MAX_REFUND_REQUESTS_PER_SESSION} refund requests can be made for one payment; contact the merchant`);
    }

    const metadata: Record<string, string> = { requestedBy: 'customer', source: 'checkout' };
    if (input.email?.trim()) metadata.email = input.email.trim();
    const refund = await requestRefund(sql, {
      merchantId: session.merchantId,
      livemode: session.livemode,
      paymentId: sessionId,
      address: destination,
      reason: input.reason?.trim() || undefined,
      metadata,
    });
    return {
      object: 'refund_request',
      id: refund.id,
      sessionId,
      status: 'requested',
      amount: formatAmount(refund.amount, session.decimals),
      amountBaseUnits: refund.amount.toString(),
      currency: session.currency,
      chain: session.chain,
      destination: refund.toAddress,
      createdAt: refund.createdAt.toISOString(),
    };
  });
}
