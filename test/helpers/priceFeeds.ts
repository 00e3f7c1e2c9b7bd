import { numberToHex, pad, type Address } from 'viem';
import { loadChains, type FeedPair } from '../../src/internal/chains.ts';
import type { Anvil, EvmChainName } from './anvil.ts';
import { testContractRuntime } from './solidity.ts';

/** The real address of `pair`'s Chainlink feed on `chain` (chains/<chain>.json). */
export function feedAddress(chain: EvmChainName, pair: FeedPair): Address {
  const feed = loadChains()[chain].priceFeeds?.[pair];
  if (!feed) throw new Error(`${chain} has no ${pair} feed in chains/${chain}.json`);
  return feed.address as Address;
}

const word = (value: bigint) => pad(numberToHex(BigInt.asUintN(256, value)), { size: 32 });

/**
 * Installs test/contracts/TestAggregator.sol at the real address of `pair`'s feed on the anvil
 * chain and sets its round: `answer` at `decimals`, updated `ageSeconds` before the chain's
 * latest block (default: just now), round id `roundId`.
 */
export async function setFeed(
  anvil: Anvil,
  chain: EvmChainName,
  pair: FeedPair,
  round: { answer: bigint; decimals?: number; ageSeconds?: number; roundId?: bigint },
): Promise<Address> {
  const address = feedAddress(chain, pair);
  await anvil.client.setCode({ address, bytecode: testContractRuntime('TestAggregator.sol', 'TestAggregator') });
  const now = BigInt(Math.floor(Date.now() / 1000));
  const values = [round.roundId ?? 18446744073709551617n, round.answer, now - BigInt(round.ageSeconds ?? 0), BigInt(round.decimals ?? 8)];
  for (const [slot, value] of values.entries()) await anvil.client.setStorageAt({ address, index: word(BigInt(slot)), value: word(value) });
  return address;
}
