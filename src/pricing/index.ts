/**
 * Prices in a fiat currency (issue 26): Chainlink feeds read over the configured RPC URLs turn
 * a `price` (`{"amount":"49.00","currency":"EUR"}`) into a token amount; the sandbox uses fixed
 * rates. docs/checkout.md, "Prices in your currency".
 */
export { quotePrice, STALE_GRACE_SECONDS, type PricingDeps, type QuoteRequest, type Quoted } from './quote.ts';
export { createFeedCache, FEED_CACHE_MS, type FeedCache } from './feeds.ts';
export { FIAT_DECIMALS, parsePrice, requireAmountOrPrice, storedPrice } from './fiat.ts';
export { SANDBOX_RATES } from './sandboxRates.ts';
export { rateText, tokenUnits, withinPeg } from './convert.ts';
export type { FeedReading, FiatPrice, PriceQuote } from './types.ts';
