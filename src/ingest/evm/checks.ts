import { hexToBigInt } from 'viem';
import type { ChainConfig } from '../../internal/chains.ts';
import { NonRetryableError, RetryableError } from '../../internal/errors.ts';
import type { Logger } from '../../internal/logger.ts';
import { RpcRequestRejected, type Rpc } from './rpc.ts';

/** `decimals()` selector. */
const DECIMALS_CALL = '0x313ce567';

/**
 * Start-up checks of one chain: every reachable RPC URL reports the configured chain id, and each
 * configured token's `decimals()` equals the configured value. A URL that does not answer is
 * skipped (it may be down); if none answers the check is retried later.
 * @throws {NonRetryableError} naming the chain, the URL label and what differs.
 */
export async function checkChain(params: { rpc: Rpc; chain: ChainConfig; logger: Logger }): Promise<void> {
  const { rpc, chain, logger } = params;
  // Every URL and every token at once: behind a provider each is a 50-150 ms round trip, and the
  // checks are read-only. The results are judged in the URLs' and tokens' order, chain ids first, as before.
  const tokenResults = Promise.allSettled(
    chain.tokens.map((token) =>
      rpc.request<string>('eth_call', [{ to: token.address, data: DECIMALS_CALL }, 'latest']).catch((error) => {
        // A node that refuses the call itself (a revert: no decimals() there) refuses it every time.
        if (error instanceof RpcRequestRejected) {
          throw new NonRetryableError(
            `${chain.name}: token ${token.symbol} at ${token.address}: decimals() rejected by the node; the ${chain.name} ingester refuses to start`,
            { cause: error },
          );
        }
        throw error;
      }),
    ),
  );
  const reported = await Promise.all(
    rpc.endpoints.map((label, index) =>
      rpc.requestAt<string>(index, 'eth_chainId').catch((error) => {
        logger.warn({
          msg: 'RPC endpoint did not answer eth_chainId; skipping it for the check',
          chain: chain.name,
          endpoint: label,
          error: (error as Error).message?.split('\n')[0],
        });
        return undefined;
      }),
    ),
  );
  let answered = 0;
  for (const [index, label] of rpc.endpoints.entries()) {
    const id = reported[index] === undefined ? undefined : Number(hexToBigInt(reported[index] as `0x${string}`));
    if (id === undefined) continue;
    answered += 1;
    if (id !== chain.chainId) {
      throw new NonRetryableError(
        `${chain.name}: RPC endpoint ${label} reports chain id ${id}, but chains/${chain.name}.json says ${chain.chainId}; the ${chain.name} ingester refuses to start`,
      );
    }
  }
  if (answered === 0) throw new RetryableError(`${chain.name}: no RPC URL answered eth_chainId`);

  const results = await tokenResults;
  // A refusal that stops the ingester outranks a token whose call only failed for now.
  const refused = results.find((result) => result.status === 'rejected' && result.reason instanceof NonRetryableError);
  if (refused) throw (refused as PromiseRejectedResult).reason;
  for (const [i, token] of chain.tokens.entries()) {
    const settled = results[i]!;
    if (settled.status === 'rejected') throw settled.reason;
    const result = settled.value;
    if (!result || result === '0x') {
      throw new NonRetryableError(
        `${chain.name}: token ${token.symbol} at ${token.address} has no decimals() on this chain (no contract there?); the ${chain.name} ingester refuses to start`,
      );
    }
    const decimals = Number(hexToBigInt(result as `0x${string}`));
    if (decimals !== token.decimals) {
      throw new NonRetryableError(
        `${chain.name}: token ${token.symbol} at ${token.address} has decimals() = ${decimals}, but chains/${chain.name}.json says ${token.decimals}; the ${chain.name} ingester refuses to start`,
      );
    }
  }
}
