import type { FiatPrice, PriceQuote } from '../../pricing/types.ts';
import { pairName, type PaymentOption } from '../../payments/options.ts';
import { html, type Html } from '../html.ts';

/**
 * What a payment or a link page says of the customer's choice and of a fiat price (issue 26):
 * the accepted (chain, currency) pairs, the pair chosen (or that the choice is still to come),
 * and how a fiat price became the token amount (rate, Chainlink rounds). `<dt>/<dd>` pairs for
 * the pages' `dl.facts`.
 */

/** The accepted pairs as text: `USDC on base, USDT on polygon`. */
export function pairsText(pairs: readonly PaymentOption[]): string {
  return pairs.map(pairName).join(', ');
}

/**
 * The options and the choice: a single pair is just that pair; several list the options and the
 * chosen one, or "waiting for the customer's choice" while `chosen` is null.
 */
export function choiceFacts(options: readonly PaymentOption[], chosen: PaymentOption | null): Html {
  if (options.length === 1 && chosen) return html`<dt>Payment options</dt><dd id="payment-options">${pairName(options[0]!)} (no choice)</dd>`;
  return html`<dt>Payment options</dt><dd id="payment-options">${pairsText(options)}</dd>
<dt>Customer's choice</dt><dd id="payment-choice">${chosen ? pairName(chosen) : html`<span class="help">Waiting for the customer's choice</span>`}</dd>`;
}

/** The rounds a quote read, for people: `EUR/USD round 123 on polygon, 2026-…`; the sandbox's fixed rates say so. */
function feedsText(quote: PriceQuote): string {
  if (quote.source === 'sandbox' || quote.feeds.length === 0) return 'sandbox rate (test mode: fixed, documented rates)';
  return quote.feeds.map((feed) => `${feed.pair} round ${feed.roundId} at ${feed.address} on ${feed.chain}, updated ${feed.updatedAt}`).join('; ');
}

/**
 * A fiat price and, once converted, its quote: `49.00 EUR at 1.08 USDC per EUR` with the feeds'
 * rounds and the time of the quote; before conversion, that it is converted at the choice or visit.
 */
export function priceFacts(price: FiatPrice | null, quote: PriceQuote | null, currency: string | null, pending: string): Html {
  if (!price) return html``;
  if (!quote) return html`<dt>Price</dt><dd id="fiat-price">${price.amount} ${price.currency} <span class="help">(${pending})</span></dd>`;
  return html`<dt>Price</dt><dd id="fiat-price">${price.amount} ${price.currency} at ${quote.rate} ${currency ?? 'token units'} per ${price.currency}</dd>
<dt>Price feeds</dt><dd id="price-feeds">${feedsText(quote)} <span class="help">(quoted ${quote.quotedAt})</span></dd>`;
}
