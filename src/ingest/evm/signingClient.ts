import { createPublicClient, custom, defineChain, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { ChainName } from '../../internal/config.ts';
import type { Rpc } from './rpc.ts';

/**
 * A gas-only key's account and a viem client over the ingesters' RPC pool (failover, rate rules,
 * metrics; viem's own retries off, the pool retries): what x402's relayer and the deposit sweeper
 * each sign and send with.
 */
export function createSigningClient(params: { chain: ChainName; chainId: number; key: Hex; rpc: Rpc }) {
  const account: PrivateKeyAccount = privateKeyToAccount(params.key);
  const chain = defineChain({
    id: params.chainId,
    name: params.chain,
    nativeCurrency: { name: 'native', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [] } },
  });
  const client: PublicClient = createPublicClient({
    chain,
    transport: custom({ request: ({ method, params: args }) => params.rpc.request(method, args ?? []) }, { retryCount: 0 }),
  });
  return { account, chain, client };
}
