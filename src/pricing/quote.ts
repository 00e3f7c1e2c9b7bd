import { CHAIN_NAMES, type ChainName } from '../internal/config.ts';
import { currencyDecimals, loadChains, type ChainConfig, type Currency, type FeedPair } from '../internal/chains.ts';
import { badRequest, UnavailableError, UnprocessableError } from '../internal/errors.ts';
import { formatAmount } from '../internal/money.ts';
import type { TransactionLookups } from '../ingest/lookup.ts';
import { ONE_USD, rateText, tokenUnits, withinPeg, type Answer } from './convert.ts';
import { parsePrice } from './fiat.ts';
import { readFeed, type FeedCache, type FeedRound } from './feeds.ts';
import { sandboxAnswer } from './sandboxRates.ts';
import type { FeedReading, FiatPrice, PriceQuote } from './types.ts';

/**
 * A feed may be this much older than its heartbeat before it is called stale: a heartbeat round
 * takes a block or two to land, and the gateway's clock may differ from the chain's by seconds.
 */
export const STALE_GRACE_SECONDS = 60;

/** What {@link quotePrice} needs: the API's chain lookups, the peg band, and optionally a cache and a clock. */
export interface PricingDeps {
  lookups: Pick<TransactionLookups, 'available' | 'callContract'>;
  /** SVC_PEG_BAND_BPS. */
  pegBandBps: number;
  cache?: FeedCache | undefined;
  chains?: Record<ChainName, ChainConfig> | undefined;
  now?: (() => Date) | undefined;
}

/** What to price: a fiat price, paid in `currency` on `chain`, live or sandbox. */
export interface QuoteRequest {
  price: { amount: string; currency: string };
  chain: ChainName;
  currency: Currency;
  livemode: boolean;
}

/** The token amount (base units of `currency` on `chain`) and how it was reached. */
export interface Quoted {
  amount: bigint;
  /** Decimals of `amount` (the token's on the chain). */
  decimals: number;
  price: FiatPrice;
  quote: PriceQuote;
}

/**
 * The EVM chains whose feeds may price a payment on `chain`, in order: the chain itself first
 * (its own feeds), then every other EVM chain in the configuration's order. Solana has no
 * Chainlink feeds configured here, so it uses the first EVM chain that has the pairs (issue 26).
 * Only chains with both pairs and an RPC URL in this process are candidates.
 */
function candidates(deps: PricingDeps, chains: Record<ChainName, ChainConfig>, chain: ChainName, pairs: FeedPair[]): ChainName[] {
  const order = [chain, ...CHAIN_NAMES.filter((name) => name !== chain)];
  return order.filter((name) => chains[name]?.kind === 'evm' && pairs.every((pair) => chains[name]!.priceFeeds?.[pair]) && deps.lookups.available(name));
}

/** Checks one round before it prices anything; every refusal is a 422 that names the feed. */
function checkRound(deps: PricingDeps, reading: FeedReading, round: FeedRound, heartbeatSeconds: number): void {
  const where = `the Chainlink ${reading.pair} feed on ${reading.chain} (${reading.address})`;
  if (round.answer <= 0n)
    throw new UnprocessableError(
      `${where} answers ${round.answer}, which is not a price; the price cannot be converted now: retry later, or give amount instead of price`,
    );
  const now = BigInt(Math.floor((deps.now?.() ?? new Date()).getTime() / 1000));
  if (now - round.updatedAt > BigInt(heartbeatSeconds + STALE_GRACE_SECONDS)) {
    throw new UnprocessableError(
      `${where} was last updated at ${reading.updatedAt}, longer ago than its heartbeat of ${heartbeatSeconds} s (plus ${STALE_GRACE_SECONDS} s): the price cannot be converted now: retry later, or give amount instead of price`,
    );
  }
}

async function readPair(deps: PricingDeps, chain: ChainConfig, pair: FeedPair): Promise<{ reading: FeedReading; answer: Answer }> {
  const feed = chain.priceFeeds![pair]!;
  const round = await readFeed(deps.lookups, deps.cache, chain.name, feed.address);
  const reading: FeedReading = {
    pair,
    chain: chain.name,
    address: feed.address,
    roundId: round.roundId.toString(),
    answer: round.answer.toString(),
    decimals: round.decimals,
    updatedAt: new Date(Number(round.updatedAt) * 1000).toISOString(),
  };
  checkRound(deps, reading, round, feed.heartbeatSeconds);
  return { reading, answer: { answer: round.answer, decimals: round.decimals } };
}

/**
 * Converts a fiat price into base units of `currency` on `chain` (issue 26): fiat → USD by the
 * fiat's Chainlink /USD feed (USD itself: 1), USD → token by the token's /USD feed, rounded up to
 * the token's base unit (convert.ts). Live: the feeds are read over the configured RPC URLs of
 * `chain`, or of another EVM chain that has the pairs (Solana, or a chain without one of them);
 * sandbox: fixed rates (sandboxRates.ts), no RPC. Writes nothing.
 * @throws {InvalidRequestError} 400: a bad price, or a currency not offered on the chain.
 * @throws {UnprocessableError} 422: a feed stale (older than its heartbeat plus {@link STALE_GRACE_SECONDS}),
 * answering ≤ 0, the token's /USD outside the peg band, or no configured chain with the feeds.
 * @throws {UnavailableError} 503: every RPC URL of every candidate chain failed.
 */
export async function quotePrice(deps: PricingDeps, request: QuoteRequest): Promise<Quoted> {
  const chains = deps.chains ?? loadChains();
  const parsed = parsePrice(request.price);
  const price: FiatPrice = { amount: request.price.amount, currency: parsed.currency };
  const chain = chains[request.chain];
  const tokenDecimals = chain && currencyDecimals(chain, request.currency);
  if (tokenDecimals === undefined) throw badRequest(`${request.currency} is not offered on ${request.chain}`);
  const fiatPair = parsed.currency === 'USD' ? undefined : (`${parsed.currency}/USD` as FeedPair);
  const tokenPair = `${request.currency}/USD` as FeedPair;
  const quotedAt = (deps.now?.() ?? new Date()).toISOString();
  const convert = (fiatUsd: Answer, tokenUsd: Answer) => {
    if (!withinPeg(tokenUsd, deps.pegBandBps)) {
      throw new UnprocessableError(
        `${request.currency} is at ${formatAmount(tokenUsd.answer, tokenUsd.decimals)} USD by its Chainlink feed, outside the peg band of ±${deps.pegBandBps / 100} % (SVC_PEG_BAND_BPS): a fiat price is not converted into it now; retry later, or give amount instead of price`,
      );
    }
    return tokenUnits({ priceMinor: parsed.minor, priceDecimals: parsed.decimals, fiatUsd, tokenUsd, tokenDecimals });
  };

  if (!request.livemode) {
    const fiatUsd = fiatPair ? sandboxAnswer(fiatPair) : ONE_USD;
    const tokenUsd = sandboxAnswer(tokenPair);
    return {
      amount: convert(fiatUsd, tokenUsd),
      decimals: tokenDecimals,
      price,
      quote: { source: 'sandbox', rate: rateText(fiatUsd, tokenUsd), feeds: [], quotedAt },
    };
  }

  const pairs = fiatPair ? [fiatPair, tokenPair] : [tokenPair];
  const usable = candidates(deps, chains, request.chain, pairs);
  if (usable.length === 0) {
    throw new UnprocessableError(
      `no chain this gateway reads has Chainlink feeds for ${pairs.join(' and ')}, so a price in ${parsed.currency} cannot be converted into ${request.currency}; give amount instead of price`,
    );
  }
  let lastError: unknown;
  for (const name of usable) {
    try {
      const readings = await Promise.all(pairs.map((pair) => readPair(deps, chains[name]!, pair)));
      const fiatUsd = fiatPair ? readings[0]!.answer : ONE_USD;
      const tokenUsd = readings[readings.length - 1]!.answer;
      const amount = convert(fiatUsd, tokenUsd);
      return {
        amount,
        decimals: tokenDecimals,
        price,
        quote: { source: 'chainlink', rate: rateText(fiatUsd, tokenUsd), feeds: readings.map((r) => r.reading), quotedAt },
      };
    } catch (error) {
      // An RPC that does not answer: the same feeds on the next chain may. A feed's own answer
      // (stale, not a price, off the peg) is the market's, and refuses at once.
      if (!(error instanceof UnavailableError)) throw error;
      lastError = error;
    }
  }
  throw lastError;
}
