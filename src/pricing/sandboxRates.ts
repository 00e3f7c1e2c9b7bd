import type { FeedPair } from '../internal/chains.ts';
import type { Answer } from './convert.ts';

/**
 * The sandbox's fixed rates (test keys never read a chain): USD per unit, at 8 decimals as
 * Chainlink's USD feeds answer. Round numbers near the market, so a test merchant can check its
 * arithmetic by hand: 49.00 EUR is 52.92 USDC in the sandbox. Documented in docs/checkout.md.
 */
export const SANDBOX_RATES: Record<FeedPair, bigint> = {
  'EUR/USD': 108_000_000n,
  'GBP/USD': 127_000_000n,
  'JPY/USD': 670_000n,
  'CHF/USD': 113_000_000n,
  'CAD/USD': 73_000_000n,
  'AUD/USD': 66_000_000n,
  'USDC/USD': 100_000_000n,
  'USDT/USD': 100_000_000n,
};

/** A sandbox rate as a feed answer. */
export function sandboxAnswer(pair: FeedPair): Answer {
  return { answer: SANDBOX_RATES[pair], decimals: 8 };
}
