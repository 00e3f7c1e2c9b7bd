import { RetryableError } from '../../internal/errors.ts';
import type { RangeFetcher } from './fetch.ts';
import type { BlockHeader } from './persist.ts';
import { RpcRequestRejected } from './rpc.ts';

/** The head and, when asked, the `safe` and `finalized` block numbers, as the ingester reads them each cycle. */
export interface ChainTips {
  latest: BlockHeader;
  tags?: { safe: bigint; finalized: bigint };
}

/** Reads the chain's tips for one EVM ingester (see {@link createChainTips}). */
export interface ChainTipsReader {
  /** The head, and `safe`/`finalized` when `withTags`. */
  read(withTags: boolean): Promise<ChainTips>;
  /** One tag's block number (see {@link createChainTips} for a node without it). */
  tagNumber(tag: 'safe' | 'finalized', latest: bigint): Promise<bigint>;
}

/**
 * The head, `safe` and `finalized` in one JSON-RPC batch: one round trip and one request, where
 * they took two round trips (the head, then both tags) and three requests, each 50-150 ms behind a
 * hosted provider. A node without the tags (pre-merge style) refuses the batch; then each is read
 * alone and a missing tag is the head minus the confirmation depth (twice it for `finalized`).
 */
export function createChainTips(params: { chain: string; fetcher: Pick<RangeFetcher, 'getHeader' | 'getHeaders'>; confirmedDepth: bigint }): ChainTipsReader {
  const { fetcher, confirmedDepth } = params;
  const fallback = (tag: 'safe' | 'finalized', latest: bigint) => {
    const number = latest - confirmedDepth * (tag === 'finalized' ? 2n : 1n);
    return number < 0n ? 0n : number;
  };

  async function tagNumber(tag: 'safe' | 'finalized', latest: bigint): Promise<bigint> {
    try {
      const header = await fetcher.getHeader(tag);
      if (header) return header.number;
    } catch (error) {
      if (!(error instanceof RpcRequestRejected)) throw error;
    }
    return fallback(tag, latest);
  }

  const noLatest = () => new RetryableError(`${params.chain}: the node returned no latest block`);

  return {
    tagNumber,
    async read(withTags) {
      if (!withTags) {
        const latest = await fetcher.getHeader('latest');
        if (!latest) throw noLatest();
        return { latest };
      }
      const batch = await fetcher.getHeaders(['latest', 'safe', 'finalized']).catch((error) => {
        if (error instanceof RpcRequestRejected) return undefined;
        throw error;
      });
      if (batch) {
        const [latest, safe, finalized] = batch;
        if (!latest) throw noLatest();
        return {
          latest,
          tags: { safe: safe?.number ?? fallback('safe', latest.number), finalized: finalized?.number ?? fallback('finalized', latest.number) },
        };
      }
      const latest = await fetcher.getHeader('latest');
      if (!latest) throw noLatest();
      const [safe, finalized] = await Promise.all([tagNumber('safe', latest.number), tagNumber('finalized', latest.number)]);
      return { latest, tags: { safe, finalized } };
    },
  };
}
