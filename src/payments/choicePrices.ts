import { formatAmount, formatDisplayAmount, parseAmount } from '../internal/money.ts';
import { quotePrice, type FiatPrice, type PricingDeps } from '../pricing/index.ts';
import type { CreateSessionParams } from './sessions.ts';
import { amountForChoice, type PaymentOption } from './options.ts';

/**
 * What a pair costs (issue 26): a token amount is that many units of whichever stablecoin is
 * chosen; a fiat `price` is converted for the pair (src/pricing) when the pair is known: at a
 * single-pair session's creation, at a link visit, at the customer's choice. Before the choice the
 * chooser only shows an indicative amount, quoted when the page is rendered and fixed at the choice.
 */

/** A session's amount, with the fiat price and the quote that made it when priced (what createSession records). */
export type Priced = Pick<CreateSessionParams, 'amount' | 'price' | 'priceQuote'>;

/**
 * The token amount of a session for `pair`: `amount` as given, or `price` converted now (src/pricing:
 * Chainlink feeds live, fixed rates in the sandbox) with the price and quote to record.
 * @throws {UnprocessableError} 422 a stale, non-positive or off-peg feed; {UnavailableError} 503 no RPC answered.
 */
export async function amountOf(
  pricing: PricingDeps,
  body: { amount?: string | undefined; price?: FiatPrice | undefined; chain: CreateSessionParams['chain']; currency: CreateSessionParams['currency'] },
  livemode: boolean,
): Promise<Priced> {
  if (!body.price) return { amount: body.amount! };
  const quoted = await quotePrice(pricing, { price: body.price, chain: body.chain, currency: body.currency, livemode });
  return { amount: formatAmount(quoted.amount, quoted.decimals), price: quoted.price, priceQuote: quoted.quote };
}

/** What one option costs as the chooser shows it. */
export interface OptionCost {
  /** Token units (decimal text, at least two decimals): exact for a token amount, indicative for a price; null when the rate cannot be read now. */
  amount: string | null;
  /** The fiat price, or null for a token amount. */
  price: FiatPrice | null;
  /** Token units per one fiat unit at render (null: no price, or no rate now). */
  rate: string | null;
  /** True when `amount` is an estimate from `price`, fixed only when the customer chooses. */
  indicative: boolean;
}

/** How long the chooser waits for a rate before it shows the price alone: the page must not hang on a slow RPC. */
export const INDICATIVE_QUOTE_TIMEOUT_MS = 2_000;

/**
 * What each pair costs, for the chooser page and the JSON options, in the pairs' order. A token
 * amount: that amount. A fiat price: the price, and the token amount and rate at the feeds' current
 * answers (through the API's feed cache, 5 s), marked indicative; a pair whose feeds cannot be
 * read or are refused now (stale, off-peg, no RPC within {@link INDICATIVE_QUOTE_TIMEOUT_MS}) shows
 * the price alone. Writes nothing and never throws for a feed: the choice itself refuses then.
 */
export async function optionCosts(
  pricing: PricingDeps | undefined,
  terms: { amount?: string | undefined; price?: FiatPrice | null | undefined },
  pairs: readonly PaymentOption[],
  livemode: boolean,
): Promise<OptionCost[]> {
  const price = terms.price;
  if (!price) return unquotedCosts(terms, pairs);
  return Promise.all(
    pairs.map(async (pair): Promise<OptionCost> => {
      const none: OptionCost = { amount: null, price, rate: null, indicative: true };
      if (!pricing) return none;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), INDICATIVE_QUOTE_TIMEOUT_MS);
      });
      try {
        const quoted = await Promise.race([quotePrice(pricing, { price, ...pair, livemode }), late]);
        if (!quoted) return none;
        return { amount: shown(formatAmount(quoted.amount, quoted.decimals)), price, rate: quoted.quote.rate, indicative: true };
      } catch {
        // A refused or unreadable feed: the choice answers why (422/503); the page shows the price.
        return none;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/** At least two decimals, as the page shows amounts ("25.00"); 18 decimals read every stablecoin's. */
const shown = (amount: string) => formatDisplayAmount(parseAmount(amount, 18), 18);

/** What each pair costs without reading a feed: a token amount as is, a fiat price alone (no indicative amount). */
export function unquotedCosts(terms: { amount?: string | undefined; price?: FiatPrice | null | undefined }, pairs: readonly PaymentOption[]): OptionCost[] {
  const price = terms.price;
  if (price) return pairs.map(() => ({ amount: null, price, rate: null, indicative: true }));
  return pairs.map((pair) => ({ amount: shown(amountForChoice({ amount: terms.amount! }, pair)), price: null, rate: null, indicative: false }));
}
