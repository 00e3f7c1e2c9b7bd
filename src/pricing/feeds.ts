import { decodeFunctionResult, encodeFunctionData } from 'viem';
import type { ChainName } from '../internal/config.ts';
import type { TransactionLookups } from '../ingest/lookup.ts';
import { UnavailableError } from '../internal/errors.ts';

/** The two functions of Chainlink's AggregatorV3Interface that a price needs. */
const AGGREGATOR_ABI = [
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'uint8' }] },
  {
    type: 'function',
    name: 'latestRoundData',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'roundId', type: 'uint80' },
      { name: 'answer', type: 'int256' },
      { name: 'startedAt', type: 'uint256' },
      { name: 'updatedAt', type: 'uint256' },
      { name: 'answeredInRound', type: 'uint80' },
    ],
  },
] as const;

/** A feed's latest round as read. */
export interface FeedRound {
  roundId: bigint;
  answer: bigint;
  decimals: number;
  /** Seconds since the epoch (the chain's timestamp of the round's update). */
  updatedAt: bigint;
}

/**
 * Rounds read in the last few seconds, by chain and feed address. A busy shop creating many
 * sessions reads each feed at most once per `ttlMs` instead of twice per session; a few seconds
 * is far below any feed's heartbeat, and each reading's own `updatedAt` is still checked against
 * the heartbeat when used. One cache per API (created with it), never shared between processes.
 */
export interface FeedCache {
  ttlMs: number;
  entries: Map<string, { at: number; round: Promise<FeedRound> }>;
}

/** Default lifetime of a cached reading: 5 s (docs/checkout.md, "Prices in your currency"). */
export const FEED_CACHE_MS = 5_000;

export function createFeedCache(ttlMs = FEED_CACHE_MS): FeedCache {
  return { ttlMs, entries: new Map() };
}

async function callData(lookups: Pick<TransactionLookups, 'callContract'>, chain: ChainName, address: string, functionName: 'decimals' | 'latestRoundData') {
  const data = await lookups.callContract(chain, { to: address, data: encodeFunctionData({ abi: AGGREGATOR_ABI, functionName }) });
  if (!data) throw new UnavailableError(`${chain}: the Chainlink feed at ${address} did not answer ${functionName}() (no contract there?); retry later`);
  return data;
}

/**
 * Reads a feed's `decimals()` and `latestRoundData()` over the chain's configured RPC URLs (the
 * API's lookup pool: failover, cooldowns, metrics), or returns the cached reading.
 * @throws {UnavailableError} no RPC URL, every URL failed, or nothing answers at the address.
 */
export async function readFeed(
  lookups: Pick<TransactionLookups, 'callContract'>,
  cache: FeedCache | undefined,
  chain: ChainName,
  address: string,
): Promise<FeedRound> {
  const key = `${chain}:${address}`;
  const now = Date.now();
  const cached = cache?.entries.get(key);
  if (cached && now - cached.at < cache!.ttlMs) return cached.round;
  const round = (async () => {
    const [decimalsData, latestData] = await Promise.all([callData(lookups, chain, address, 'decimals'), callData(lookups, chain, address, 'latestRoundData')]);
    const decimals = decodeFunctionResult({ abi: AGGREGATOR_ABI, functionName: 'decimals', data: decimalsData });
    const [roundId, answer, , updatedAt] = decodeFunctionResult({ abi: AGGREGATOR_ABI, functionName: 'latestRoundData', data: latestData });
    return { roundId, answer, decimals: Number(decimals), updatedAt };
  })();
  if (cache) {
    cache.entries.set(key, { at: now, round });
    // A failed read is not kept: the next session asks again.
    round.catch(() => cache.entries.get(key)?.round === round && cache.entries.delete(key));
  }
  return round;
}
