import type { ChainName } from '../internal/config.ts';
import type { FeedPair, FiatCurrency } from '../internal/chains.ts';

/** A price in a fiat currency as the merchant wrote it: decimal text and an ISO 4217 code. */
export interface FiatPrice {
  amount: string;
  currency: FiatCurrency;
}

/** One feed's round as read when the price was converted (every number as text: JSON carries it). */
export interface FeedReading {
  pair: FeedPair;
  chain: ChainName;
  /** The feed's proxy address (EIP-55). */
  address: string;
  roundId: string;
  /** The raw answer, an integer at `decimals`. */
  answer: string;
  decimals: number;
  /** When the round was updated on chain, ISO 8601 UTC. */
  updatedAt: string;
}

/**
 * How a fiat price became a token amount, stored with the session (`price_quote`) and shown in
 * the API, webhooks, the dashboard and the receipt. `rate` is token units per one unit of the
 * fiat currency, decimal text rounded to 8 places for people; the amount itself is computed from
 * the feeds' exact answers (convert.ts), not from this rounded rate.
 */
export interface PriceQuote {
  source: 'chainlink' | 'sandbox';
  rate: string;
  /** The feeds read (fiat/USD first, unless the price is in USD, then the token's /USD); none in the sandbox. */
  feeds: FeedReading[];
  quotedAt: string;
}
