import { numberToHex } from 'viem';
import type { ChainConfig } from '../../internal/chains.ts';
import { RetryableError } from '../../internal/errors.ts';
import { blockMayHaveTransfers, bloomBits } from './bloom.ts';
import type { BlockHeader } from './persist.ts';
import { RpcRequestRejected, type Rpc } from './rpc.ts';
import { fetchTransferLogs, parseTransfers, TRANSFER_TOPIC, type ObservedTransfer, type RpcLog } from './transfers.ts';
import type { WatchedWallets } from './watched.ts';

/** Ranges up to this many unfinalized blocks read headers first and skip `eth_getLogs` when the blooms rule them out. */
const BLOOM_RANGE_BLOCKS = 16;

interface RpcBlock {
  number: string;
  hash: string;
  parentHash: string;
  timestamp: string;
  logsBloom: `0x${string}`;
}

const toHeader = (block: RpcBlock): BlockHeader => ({
  number: BigInt(block.number),
  hash: block.hash.toLowerCase(),
  parentHash: block.parentHash.toLowerCase(),
  timestamp: BigInt(block.timestamp),
  logsBloom: block.logsBloom,
});

/** A range's data, fetched ahead of its commit. */
export interface FetchedRange {
  from: bigint;
  to: bigint;
  headers: BlockHeader[];
  transfers: ObservedTransfer[];
  /** Most logs the node answered for one block of the range (watched or not): for sizing the next ranges' answers. */
  densestBlockLogs?: number;
  fetchMs?: number;
}

/** The largest number of logs in one block among `logs`. */
function densestBlock(logs: RpcLog[]): number {
  const perBlock = new Map<string, number>();
  let densest = 0;
  for (const log of logs) {
    const count = (perBlock.get(log.blockNumber) ?? 0) + 1;
    perBlock.set(log.blockNumber, count);
    if (count > densest) densest = count;
  }
  return densest;
}

/** Thrown when a range's headers and logs disagree (the chain moved while we read): the cycle restarts. */
export class ChainMovedError extends RetryableError {
  override name = 'ChainMovedError';
}

/** The block tags the ingester reads. */
export type BlockTag = 'latest' | 'safe' | 'finalized';

/** Reads one EVM chain's blocks for its ingester (see {@link createRangeFetcher}). */
export interface RangeFetcher {
  /** The node's header at a number or tag, or null when it has none. */
  getHeader(tag: bigint | BlockTag): Promise<BlockHeader | null>;
  /** Several headers in one round trip (a JSON-RPC batch), in the order asked; any call's error fails them all. */
  getHeaders(tags: (bigint | BlockTag)[]): Promise<(BlockHeader | null)[]>;
  /** The headers of the unfinalized part of [from, to] (`fin`: the finalized block) and the transfers into watched wallets in it. */
  fetchRange(from: bigint, to: bigint, fin: bigint): Promise<FetchedRange>;
}

/**
 * The fetching half of an EVM ingester: headers, `eth_getLogs` and block times over the chain's
 * RPC pool. `onRangeRefused(size, fits)` tells the ingester a provider refused a range of `size`
 * blocks (and, when the provider measured the excess, the size that should fit), so it plans smaller ones; the range is then thrown as a {@link ChainMovedError}.
 */
export function createRangeFetcher(params: {
  chain: ChainConfig;
  rpc: Rpc;
  watched: WatchedWallets;
  onRangeRefused(size: bigint, fits?: bigint): void;
}): RangeFetcher {
  const { rpc, watched } = params;
  const name = params.chain.name;
  const tokens = params.chain.tokens.map((token) => token.address.toLowerCase());
  const tokenCanonical = new Map(params.chain.tokens.map((token) => [token.address.toLowerCase(), token.address]));
  const bloomFilter = { topic: bloomBits(TRANSFER_TOPIC), tokens: tokens.map((token) => bloomBits(token as `0x${string}`)) };

  async function getHeader(tag: bigint | BlockTag): Promise<BlockHeader | null> {
    const block = await rpc.request<RpcBlock | null>('eth_getBlockByNumber', [typeof tag === 'bigint' ? numberToHex(tag) : tag, false]);
    return block ? toHeader(block) : null;
  }

  /**
   * Headers by number, in JSON-RPC batches (rpc.ts): behind a provider's 50-150 ms per request,
   * the 64 unfinalized headers at the end of a backfill took eight waves of eight requests (and
   * 64 requests of the provider's rate limit) one by one; batched they take two.
   */
  async function getHeaders(numbers: (bigint | BlockTag)[]): Promise<(BlockHeader | null)[]> {
    if (numbers.length === 0) return [];
    const blocks = await rpc.requestBatch<RpcBlock | null>(
      'eth_getBlockByNumber',
      numbers.map((n) => [typeof n === 'bigint' ? numberToHex(n) : n, false]),
    );
    return blocks.map((block) => (block ? toHeader(block) : null));
  }

  async function fetchHeaders(from: bigint, to: bigint): Promise<BlockHeader[]> {
    if (to < from) return [];
    const numbers: bigint[] = [];
    for (let n = from; n <= to; n++) numbers.push(n);
    const fetched = await getHeaders(numbers);
    return fetched.map((header) => {
      if (!header) throw new ChainMovedError(`${name}: a block below the head is missing (the node is behind or the chain shrank)`);
      return header;
    });
  }

  /**
   * One range's headers (unfinalized part) and transfers. At the head (a short, wholly
   * unfinalized range) headers come first so a `logsBloom` that rules the range out saves the
   * `eth_getLogs`; while catching up the logs come first, so a range the provider refuses costs
   * one request. Either way every log must carry its block's header hash, or the range is re-read.
   */
  async function fetchRangeData(from: bigint, to: bigint, fin: bigint): Promise<FetchedRange> {
    const firstUnfinalized = from > fin ? from : fin + 1n;
    const atHead = from >= firstUnfinalized && to - from < BigInt(BLOOM_RANGE_BLOCKS);
    let headers: BlockHeader[] = [];
    if (atHead || watched.size === 0) {
      headers = await fetchHeaders(firstUnfinalized, to);
      if (watched.size === 0) return { from, to, headers, transfers: [] };
      const recipients = watched.bloom();
      if (!headers.some((header) => blockMayHaveTransfers(header.logsBloom, { ...bloomFilter, recipients }))) {
        return { from, to, headers, transfers: [] };
      }
    }
    const logs = await fetchTransferLogs({ rpc, from, to, tokens, watched, split: false, onRangeError: params.onRangeRefused }).catch((error) => {
      // Re-plan with the halved size rather than split here: commits stay small and pipelined.
      if (error instanceof RpcRequestRejected && error.kind === 'range')
        throw new ChainMovedError(`${name}: range of ${to - from + 1n} blocks refused; shrinking`, { cause: error });
      throw error;
    });
    if (!atHead) headers = await fetchHeaders(firstUnfinalized, to);
    const hashes = new Map(headers.map((header) => [header.number, header.hash]));
    for (const entry of logs) {
      const expected = hashes.get(BigInt(entry.blockNumber));
      if (expected && expected !== entry.blockHash.toLowerCase()) {
        throw new ChainMovedError(`${name}: logs of block ${BigInt(entry.blockNumber)} come from another branch than its header`);
      }
    }
    const transfers = parseTransfers(logs, { tokens: tokenCanonical, watched });
    await fillBlockTimes(transfers, headers);
    return { from, to, headers, transfers, densestBlockLogs: densestBlock(logs) };
  }

  /**
   * Gives every transfer its block's time, which decides "paid before expiry" and the monitoring
   * window. Logs carry `blockTimestamp` only on some providers; otherwise the range's headers
   * have it, and blocks outside them (finalized history) are read once each, only those that hold
   * a watched transfer. Without this, a payment ingested after an outage would be judged by when
   * it was ingested, not when it was paid.
   */
  async function fillBlockTimes(transfers: ObservedTransfer[], headers: BlockHeader[]): Promise<void> {
    const times = new Map(headers.map((header) => [header.number, new Date(Number(header.timestamp) * 1000)]));
    const missing = [...new Set(transfers.filter((t) => !t.blockTime && !times.has(t.blockNumber)).map((t) => t.blockNumber))];
    const read = await getHeaders(missing);
    read.forEach((header, i) => {
      if (!header) throw new ChainMovedError(`${name}: block ${missing[i]} of a transfer is missing (the node is behind or the chain shrank)`);
      times.set(header.number, new Date(Number(header.timestamp) * 1000));
    });
    for (const transfer of transfers) transfer.blockTime ??= times.get(transfer.blockNumber) ?? null;
  }

  return {
    getHeader,
    getHeaders,
    async fetchRange(from, to, fin) {
      const started = performance.now();
      const range = await fetchRangeData(from, to, fin);
      range.fetchMs = Math.round(performance.now() - started);
      return range;
    },
  };
}
