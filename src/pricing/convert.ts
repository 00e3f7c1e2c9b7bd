import { formatAmount } from '../internal/money.ts';

/** An answer of a feed: an integer at `decimals` (1.08 USD at 8 decimals is 108000000). */
export interface Answer {
  answer: bigint;
  decimals: number;
}

/** USD per USD: the "feed" of a price already in dollars. */
export const ONE_USD: Answer = { answer: 1n, decimals: 0 };

/** Decimal places of the rate shown to people (the amount is computed exactly, not from it). */
export const RATE_DECIMALS = 8;

/**
 * Token base units for a fiat price, with bigint arithmetic only:
 * units = price × fiatUSD ÷ tokenUSD × 10^tokenDecimals, rounded UP to the next base unit, so
 * the merchant never receives less than the price at the feeds' rates.
 *
 * With p the price in minor units (fd decimals), f the fiat/USD answer (fa decimals), t the
 * token/USD answer (ta decimals) and td the token's decimals:
 * units = ceil(p · f · 10^(ta + td) / (10^(fd + fa) · t)).
 */
export function tokenUnits(params: { priceMinor: bigint; priceDecimals: number; fiatUsd: Answer; tokenUsd: Answer; tokenDecimals: number }): bigint {
  const { priceMinor, priceDecimals, fiatUsd, tokenUsd, tokenDecimals } = params;
  if (fiatUsd.answer <= 0n || tokenUsd.answer <= 0n) throw new RangeError('feed answers must be positive');
  const numerator = priceMinor * fiatUsd.answer * 10n ** BigInt(tokenUsd.decimals + tokenDecimals);
  const denominator = 10n ** BigInt(priceDecimals + fiatUsd.decimals) * tokenUsd.answer;
  return (numerator + denominator - 1n) / denominator;
}

/** Tokens per one unit of the fiat currency (fiatUSD ÷ tokenUSD), decimal text rounded half up to {@link RATE_DECIMALS} places. */
export function rateText(fiatUsd: Answer, tokenUsd: Answer): string {
  const numerator = fiatUsd.answer * 10n ** BigInt(tokenUsd.decimals + RATE_DECIMALS);
  const denominator = 10n ** BigInt(fiatUsd.decimals) * tokenUsd.answer;
  return formatAmount((2n * numerator + denominator) / (2n * denominator), RATE_DECIMALS);
}

/**
 * Whether a stablecoin's USD answer is within `bandBps` basis points of 1.00:
 * |answer − 10^decimals| · 10000 ≤ bandBps · 10^decimals.
 */
export function withinPeg(tokenUsd: Answer, bandBps: number): boolean {
  const one = 10n ** BigInt(tokenUsd.decimals);
  const distance = tokenUsd.answer > one ? tokenUsd.answer - one : one - tokenUsd.answer;
  return distance * 10_000n <= BigInt(bandBps) * one;
}
