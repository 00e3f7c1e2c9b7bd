import {
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  keccak256,
  parseEventLogs,
  parseSignature,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import type { Rpc } from '../ingest/evm/rpc.ts';
import type { ChainName } from '../internal/config.ts';
import type { Eip3009Authorization } from './wire.ts';
import { createSigningClient } from '../ingest/evm/signingClient.ts';
import { createPermit2Calls, type Permit2Calls } from './permit2/relayer.ts';

/** FiatToken v2's EIP-3009 functions that the relayer calls or reads. */
export const EIP3009_ABI = [
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ type: 'bool' }],
  },
  { type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'account', type: 'address' }], outputs: [{ type: 'uint256' }] },
  {
    type: 'event',
    name: 'AuthorizationUsed',
    inputs: [
      { name: 'authorizer', type: 'address', indexed: true },
      { name: 'nonce', type: 'bytes32', indexed: true },
    ],
  },
  {
    type: 'event',
    name: 'Transfer',
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
] as const;

/** How far back from a reverted relayer transaction's block to look for the transaction that used the authorization first. */
const USED_BY_LOOKBACK_BLOCKS = 256n;

/** A relayer transaction, signed but maybe not sent: its hash is known before it is broadcast. */
export interface SignedTransaction {
  hash: Hex;
  raw: Hex;
}

/**
 * One chain's relayer: a gas-only key (`SVC_<CHAIN>_RELAYER_KEY`) that submits payers' signed
 * EIP-3009 authorizations. It can pay gas and nothing else: `transferWithAuthorization` moves
 * the payer's tokens to the `to` the payer signed, whoever submits it. Talks to the chain through
 * the same RPC pool as the ingester (failover, timeouts, rate), never through a second client.
 */
export interface Relayer {
  chain: ChainName;
  address: Address;
  authorizationUsed(token: string, payer: string, nonce: string): Promise<boolean>;
  balanceOf(token: string, owner: string): Promise<bigint>;
  /** The relayer's native balance (gas), in wei. */
  gasBalance(): Promise<bigint>;
  /** Builds and signs `transferWithAuthorization` at the relayer's next nonce; gas estimation simulates it (a revert throws). */
  sign(token: string, authorization: Eip3009Authorization, signature: Hex): Promise<SignedTransaction>;
  /** Sends a signed transaction; sending one the node already has is not an error. */
  broadcast(raw: Hex): Promise<void>;
  /** The receipt, or null while it is not mined. */
  receipt(hash: Hex): Promise<TransactionReceipt | null>;
  /**
   * The mined transaction that used `payer`'s `nonce` on `token` (its `AuthorizationUsed` event,
   * looked for up to `atBlock`), with the token transfers it made; null when none is found.
   */
  authorizationUsedBy(
    token: string,
    payer: string,
    nonce: string,
    atBlock: bigint,
  ): Promise<{ hash: Hex; transfers: { from: Address; to: Address; value: bigint }[] } | null>;
  /** The same key's calls for the Permit2 route (tokens without EIP-3009). */
  permit2: Permit2Calls;
}

export function createRelayer(params: { chain: ChainName; chainId: number; key: Hex; rpc: Rpc }): Relayer {
  const { account, chain, client } = createSigningClient(params);

  return {
    chain: params.chain,
    address: account.address,
    permit2: createPermit2Calls({ account, chain, client }),
    authorizationUsed: (token, payer, nonce) =>
      client.readContract({
        address: getAddress(token),
        abi: EIP3009_ABI,
        functionName: 'authorizationState',
        args: [getAddress(payer), nonce as Hex],
      }),
    balanceOf: (token, owner) => client.readContract({ address: getAddress(token), abi: EIP3009_ABI, functionName: 'balanceOf', args: [getAddress(owner)] }),
    gasBalance: () => client.getBalance({ address: account.address }),
    async sign(token, auth, signature) {
      const { v, r, s, yParity } = parseSignature(signature);
      const data = encodeFunctionData({
        abi: EIP3009_ABI,
        functionName: 'transferWithAuthorization',
        args: [
          getAddress(auth.from),
          getAddress(auth.to),
          BigInt(auth.value),
          BigInt(auth.validAfter),
          BigInt(auth.validBefore),
          auth.nonce as Hex,
          Number(v ?? BigInt(yParity + 27)),
          r,
          s,
        ],
      });
      const request = await client.prepareTransactionRequest({ account, chain, to: getAddress(token), data, nonceManager: undefined });
      const raw = await account.signTransaction(request as Parameters<typeof account.signTransaction>[0]);
      return { hash: keccak256(raw), raw };
    },
    async broadcast(raw) {
      try {
        await client.sendRawTransaction({ serializedTransaction: raw });
      } catch (error) {
        // A rebroadcast after a crash: the node (or the chain) has it already.
        if (/already known|already imported|known transaction|nonce too low/i.test(String((error as Error).message))) return;
        throw error;
      }
    },
    receipt: (hash) =>
      client.getTransactionReceipt({ hash }).catch((error: Error) => (error.name === 'TransactionReceiptNotFoundError' ? null : Promise.reject(error))),
    async authorizationUsedBy(token, payer, nonce, atBlock) {
      const address = getAddress(token);
      const logs = await client.getLogs({
        address,
        event: EIP3009_ABI[3],
        args: { authorizer: getAddress(payer), nonce: nonce as Hex },
        fromBlock: atBlock > USED_BY_LOOKBACK_BLOCKS ? atBlock - USED_BY_LOOKBACK_BLOCKS : 0n,
        toBlock: atBlock,
      });
      const hash = logs[0]?.transactionHash;
      if (!hash) return null;
      const receipt = await client.getTransactionReceipt({ hash });
      const transfers = parseEventLogs({ abi: EIP3009_ABI, eventName: 'Transfer', logs: receipt.logs })
        .filter((log) => isAddressEqual(log.address, address))
        .map((log) => ({ from: log.args.from, to: log.args.to, value: log.args.value }));
      return { hash, transfers };
    },
  };
}
