import { keccak256, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import type { Rpc } from '../ingest/evm/rpc.ts';
import type { ChainName } from '../internal/config.ts';
import { createSigningClient } from '../ingest/evm/signingClient.ts';

/** A transaction signed at a known nonce, maybe not sent: its hash is known before it is broadcast. */
export interface SignedSweepTransaction {
  hash: Hex;
  raw: Hex;
  nonce: number;
}

/**
 * One chain's sender of deposit transactions (sweeps, the factory's deployment): the chain's
 * gas-only relayer key (`SVC_<CHAIN>_RELAYER_KEY`, the x402 one) over the ingester's RPC pool.
 * Whatever it signs can only pay gas: the factory and the forwarders move money to the merchants'
 * wallets fixed in the deposit addresses, whoever calls them.
 */
export interface DepositSender {
  chain: ChainName;
  address: Address;
  /** Reads: code, balances, receipts, heads. */
  client: PublicClient;
  /**
   * Signs a call at the account's next nonce (pending). The gas limit is twice the node's
   * estimate: the estimate simulates the call (a revert throws, nothing is signed), and the
   * factory's try/catch would otherwise let a too-tight limit turn a flush into a reported
   * failure instead of a revert. Only the gas used is paid.
   */
  sign(params: { to: Address; data: Hex }): Promise<SignedSweepTransaction>;
  /** Sends a signed transaction; one the node (or the chain) already has is not an error. */
  broadcast(raw: Hex): Promise<void>;
  /** The receipt, or null while it is not mined. */
  receipt(hash: Hex): Promise<TransactionReceipt | null>;
  /** How many of the account's transactions are mined (its next nonce at the latest block). */
  minedNonce(): Promise<number>;
}

export function createDepositSender(params: { chain: ChainName; chainId: number; key: Hex; rpc: Rpc }): DepositSender {
  const { account, chain, client } = createSigningClient(params);
  return {
    chain: params.chain,
    address: account.address,
    client,
    async sign({ to, data }) {
      const estimate = await client.estimateGas({ account, to, data });
      const request = await client.prepareTransactionRequest({ account, chain, to, data, gas: estimate * 2n, nonceManager: undefined });
      const raw = await account.signTransaction(request as Parameters<typeof account.signTransaction>[0]);
      return { hash: keccak256(raw), raw, nonce: request.nonce };
    },
    async broadcast(raw) {
      try {
        await client.sendRawTransaction({ serializedTransaction: raw });
      } catch (error) {
        // A rebroadcast after a crash: the node (or the chain) has it already. A nonce used by
        // another transaction is found by the caller (minedNonce, then no receipt).
        if (/already known|already imported|known transaction|nonce too low/i.test(String((error as Error).message))) return;
        throw error;
      }
    },
    receipt: (hash) =>
      client.getTransactionReceipt({ hash }).catch((error: Error) => (error.name === 'TransactionReceiptNotFoundError' ? null : Promise.reject(error))),
    minedNonce: () => client.getTransactionCount({ address: account.address, blockTag: 'latest' }),
  };
}
