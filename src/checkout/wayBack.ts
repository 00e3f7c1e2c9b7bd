import { escapeHtml } from './qr.ts';
import type { PaymentInstructions } from './schema.ts';

/**
 * The way back from an expired checkout (issue 27): a customer who let the time run out should not
 * be left on a dead end. In order of preference:
 * 1. the payment link the session came from (`/pay/<link>`): visiting it again opens a fresh
 *    session at the same price, so the customer can simply pay;
 * 2. the merchant's `cancelUrl` (where the shop takes an abandoned checkout back);
 * 3. the merchant's `successUrl` (the only address of the shop the session knows).
 * Nothing when the session knows none of them. Both URLs are http(s) only (buildInstructions
 * drops anything else), and everything is escaped.
 */
export function wayBack(i: Pick<PaymentInstructions, 'cancelUrl' | 'successUrl' | 'merchant'>, restartUrl: string | null): string {
  const name = escapeHtml(i.merchant.name);
  if (restartUrl) {
    return `<p class="way-back"><a id="restart-link" class="button primary" href="${escapeHtml(restartUrl)}">Start a new payment</a></p>${
      i.cancelUrl ? `<p class="cancel"><a id="expired-return-link" href="${escapeHtml(i.cancelUrl)}">Return to ${name}</a></p>` : ''
    }`;
  }
  const back = i.cancelUrl ?? i.successUrl;
  if (!back) return '';
  return `<p class="way-back"><a id="expired-return-link" class="button primary" href="${escapeHtml(back)}">Return to ${name} to start again</a></p>`;
}

/** The path that starts a fresh session from the session's payment link, or null (same origin: the page's CSP and cookies stay the gateway's). */
export function restartPathOf(paymentLinkId: string | null): string | null {
  return paymentLinkId ? `/pay/${encodeURIComponent(paymentLinkId)}` : null;
}
