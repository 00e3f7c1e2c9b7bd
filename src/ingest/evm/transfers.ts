import { getAddress, numberToHex } from 'viem';
import type { Rpc } from './rpc.ts';
import { RpcRequestRejected } from './rpc.ts';
import { responseOversize } from '../rpcErrors.ts';
import type { WatchedWallets } from './watched.ts';

/** keccak256("Transfer(address,address,uint256)"): topic 0 of every ERC-20 Transfer log. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** A log as `eth_getLogs` returns it (hex quantities). */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  logIndex: string;
  removed?: boolean;
  blockTimestamp?: string;
}

/** One ERC-20 transfer into a watched wallet, addresses in canonical EIP-55 form, amount in base units. */
export interface ObservedTransfer {
  txHash: string;
  logIndex: number;
  blockNumber: bigint;
  blockHash: string;
  blockTime: Date | null;
  token: string;
  from: string;
  to: string;
  amount: bigint;
}

/**
 * Recipient topics in one `eth_getLogs` filter, at most. Providers cap OR-lists of topics
 * (several at 1,000 or fewer, some by request size); above this the query asks for every
 * Transfer of the tokens and the wallet Set filters in memory.
 */
export const TOPIC_FILTER_LIMIT = 500;

const fromCache = new Map<string, string>();
/** Checksumming costs a keccak; payers repeat, so cache (bounded: cleared when large). */
function checksum(lower: string): string {
  let value = fromCache.get(lower);
  if (!value) {
    if (fromCache.size > 100_000) fromCache.clear();
    value = getAddress(lower);
    fromCache.set(lower, value);
  }
  return value;
}

/**
 * Turns raw logs into transfers into watched wallets. Logs that are not a standard Transfer
 * (three topics), go elsewhere, carry a zero amount (address-poisoning spam; the table requires
 * amount > 0) or are flagged `removed` are skipped.
 */
export function parseTransfers(logs: RpcLog[], params: { tokens: Map<string, string>; watched: Pick<WatchedWallets, 'canonical'> }): ObservedTransfer[] {
  const out: ObservedTransfer[] = [];
  for (const log of logs) {
    if (log.removed || log.topics.length !== 3 || log.topics[0] !== TRANSFER_TOPIC) continue;
    const token = params.tokens.get(log.address.toLowerCase());
    if (!token) continue;
    const to = params.watched.canonical(`0x${log.topics[2]!.slice(26)}`.toLowerCase());
    if (!to) continue;
    const amount = log.data === '0x' ? 0n : BigInt(log.data);
    if (amount <= 0n) continue;
    out.push({
      txHash: log.transactionHash.toLowerCase(),
      logIndex: Number(log.logIndex),
      blockNumber: BigInt(log.blockNumber),
      blockHash: log.blockHash.toLowerCase(),
      blockTime: log.blockTimestamp ? new Date(Number(BigInt(log.blockTimestamp)) * 1000) : null,
      token,
      from: checksum(`0x${log.topics[1]!.slice(26)}`.toLowerCase()),
      to,
      amount,
    });
  }
  return out;
}

/** Share of the provider's measured limit a re-planned range aims at: blocks are not equally dense. */
const FIT_MARGIN = 0.8;

/**
 * The range size that should fit after a provider refused `size` blocks, when it said by how much
 * the answer was too large (a body-size limit); undefined when it did not (then the caller halves).
 * Without it a dense 100-block backfill asked the node for 60, 30 and 15 MB answers in turn, each
 * built by the node and thrown away, before a 13-block range fitted.
 */
export function fittingRange(size: bigint, error: unknown): bigint | undefined {
  const oversize = responseOversize(error);
  if (oversize === undefined) return undefined;
  const fits = BigInt(Math.floor((Number(size) / oversize) * FIT_MARGIN));
  return fits < 1n ? 1n : fits >= size ? size - 1n : fits;
}

/** viem's default limit on an HTTP answer's body: a larger `eth_getLogs` answer is refused. */
const RESPONSE_LIMIT_BYTES = 10_485_760;
/** An ERC-20 Transfer log in an `eth_getLogs` answer, JSON (about 630 bytes measured on anvil, with `blockTimestamp`), rounded up. */
const LOG_JSON_BYTES = 700;

/**
 * The largest range expected to fit in one answer when blocks hold up to `logsPerBlock` logs (the
 * densest block seen); undefined for none (nothing to scale by). A dense chain's ranges are then
 * planned to fit instead of being built in full by the node and refused.
 */
export function rangeForDensity(logsPerBlock: number): bigint | undefined {
  if (logsPerBlock <= 0) return undefined;
  const fits = BigInt(Math.floor((RESPONSE_LIMIT_BYTES * FIT_MARGIN) / (logsPerBlock * LOG_JSON_BYTES)));
  return fits < 1n ? 1n : fits;
}

/**
 * `eth_getLogs` for the tokens' Transfer logs in [from, to], splitting the range in halves when
 * the provider refuses it as too large (down to one block; one huge block is then asked for with
 * the recipients as a topic filter, in slices halved until the provider accepts them). `onRangeError` lets the caller shrink its next
 * ranges. Recipients go into the filter while there are at most {@link TOPIC_FILTER_LIMIT}.
 */
export async function fetchTransferLogs(params: {
  rpc: Rpc;
  from: bigint;
  to: bigint;
  tokens: string[];
  watched: WatchedWallets;
  /** `fits`: the size the answer's measured excess suggests (see {@link fittingRange}), when known. */
  onRangeError?: (size: bigint, fits?: bigint) => void;
  /** false: a refused multi-block range is thrown to the caller (which re-plans smaller ranges) instead of split here. */
  split?: boolean;
}): Promise<RpcLog[]> {
  const { rpc, tokens, watched } = params;
  const small = watched.size <= TOPIC_FILTER_LIMIT;
  const query = (from: bigint, to: bigint, recipients: `0x${string}`[] | null) =>
    rpc.request<RpcLog[]>('eth_getLogs', [
      { fromBlock: numberToHex(from), toBlock: numberToHex(to), address: tokens, topics: [TRANSFER_TOPIC, null, recipients] },
    ]);

  /** One block, a slice of the recipients; halves the slice while the provider still refuses. */
  async function narrow(block: bigint, topics: `0x${string}`[]): Promise<RpcLog[]> {
    try {
      return await query(block, block, topics);
    } catch (error) {
      if (!(error instanceof RpcRequestRejected && error.kind === 'range') || topics.length <= 1) throw error;
      const half = Math.ceil(topics.length / 2);
      return (await narrow(block, topics.slice(0, half))).concat(await narrow(block, topics.slice(half)));
    }
  }

  async function range(from: bigint, to: bigint): Promise<RpcLog[]> {
    try {
      return await query(from, to, small ? watched.topics() : null);
    } catch (error) {
      if (!(error instanceof RpcRequestRejected && error.kind === 'range')) throw error;
      params.onRangeError?.(to - from + 1n, fittingRange(to - from + 1n, error));
      if (from !== to && params.split === false) throw error;
      if (from === to) {
        const topics = watched.topics();
        const out: RpcLog[] = [];
        if (small) {
          if (topics.length <= 1) throw error;
          const half = Math.ceil(topics.length / 2);
          for (const slice of [topics.slice(0, half), topics.slice(half)]) out.push(...(await narrow(from, slice)));
        } else {
          for (let i = 0; i < topics.length; i += TOPIC_FILTER_LIMIT) out.push(...(await narrow(from, topics.slice(i, i + TOPIC_FILTER_LIMIT))));
        }
        return out;
      }
      const mid = from + (to - from) / 2n;
      const left = await range(from, mid);
      const right = await range(mid + 1n, to);
      return left.concat(right);
    }
  }
  return range(params.from, params.to);
}
