import { FIAT_CURRENCIES, type FiatCurrency } from '../internal/chains.ts';
import { AmountError, parseAmount } from '../internal/money.ts';
import { badRequest } from '../internal/errors.ts';
import type { FiatPrice } from './types.ts';

/** Minor-unit decimals of each fiat currency (ISO 4217): the yen has none, the others cents. */
export const FIAT_DECIMALS: Record<FiatCurrency, number> = { USD: 2, EUR: 2, GBP: 2, JPY: 0, CHF: 2, CAD: 2, AUD: 2 };

/**
 * The largest price, in whole units of any fiat currency. The token amount it converts to is
 * bounded again by the session's amount limits (terms.ts); this only keeps the arithmetic of an
 * absurd price small.
 */
export const MAX_PRICE_UNITS = 1_000_000_000n;

/** A price checked: its currency and its amount in the currency's minor units. */
export interface ParsedPrice {
  currency: FiatCurrency;
  /** Minor units (cents; yen). */
  minor: bigint;
  decimals: number;
}

/**
 * Checks a `price` from a request: a known fiat currency, positive decimal text with no more
 * decimals than the currency's minor unit. Every refusal is a 400 that says why.
 */
export function parsePrice(price: { amount: unknown; currency: unknown }): ParsedPrice {
  const currency = price.currency as FiatCurrency;
  if (!FIAT_CURRENCIES.includes(currency)) {
    throw badRequest(`price.currency ${JSON.stringify(price.currency)} is not supported: use one of ${FIAT_CURRENCIES.join(', ')}`);
  }
  const decimals = FIAT_DECIMALS[currency];
  if (typeof price.amount !== 'string') throw badRequest('price.amount must be decimal text such as "49.00"');
  let minor: bigint;
  try {
    minor = parseAmount(price.amount, decimals);
  } catch (error) {
    if (error instanceof AmountError) {
      throw badRequest(
        error.message.includes('decimal places')
          ? `price.amount ${price.amount} has too many decimal places: ${currency} has ${decimals}`
          : error.message.replace(/^amount/, 'price.amount'),
      );
    }
    throw error;
  }
  if (minor <= 0n) throw badRequest('price.amount must be a positive number');
  if (minor > MAX_PRICE_UNITS * 10n ** BigInt(decimals)) throw badRequest(`price.amount must be at most ${MAX_PRICE_UNITS} ${currency}`);
  return { currency, minor, decimals };
}

/** The price as stored and shown: the text as given, its currency. */
export function storedPrice(price: { amount: string; currency: string }): FiatPrice {
  const parsed = parsePrice(price);
  return { amount: price.amount, currency: parsed.currency };
}

/**
 * A creation gives exactly one of `amount` (token units) and `price` (fiat), and no line items
 * with a price (their unit amounts are token amounts that must add up to the amount, which a
 * price only fixes later). Checked before anything else, so no feed is read for a bad body.
 * @throws {InvalidRequestError} 400 saying which.
 */
export function requireAmountOrPrice(body: { amount?: string | undefined; price?: unknown; lineItems?: readonly unknown[] | undefined }): void {
  if (body.amount !== undefined && body.price !== undefined) throw badRequest('give either amount (in the token) or price (in a fiat currency), not both');
  if (body.amount === undefined && body.price === undefined) throw badRequest('amount or price is required');
  if (body.price !== undefined && body.lineItems && body.lineItems.length > 0)
    throw badRequest('lineItems cannot be combined with price: give description instead');
}
