import {
  createKeyPairFromBytes,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  signBytes,
  type Address,
  type Base64EncodedWireTransaction,
  type Signature,
  type Transaction,
} from '@solana/kit';
import type { SolanaRpcPool } from '../../ingest/solana/rpc.ts';

/** A payer's transaction with the fee payer's signature added: its id (the first signature) and its wire bytes. */
export interface SignedSvmTransaction {
  /** The transaction's signature (base58): the fee payer's, first in the message. */
  signature: string;
  /** Base64 of the wire transaction, as sendTransaction takes it. */
  wire: string;
}

/** What the chain says about a transaction signature. */
export type SvmTransactionStatus = { landed: false } | { landed: true; err: unknown };

/**
 * The Solana fee payer of x402 (`SVC_SOLANA_RELAYER_KEY`): adds its signature to payers'
 * transactions that passed the check (inspect.ts) and sends them, over the ingester's RPC pool
 * (failover, timeouts, metrics). Its signature is deterministic (ed25519), so a transaction's id
 * is known before it is sent and the same message always gets the same id.
 */
export interface SvmFeePayer {
  chain: 'solana';
  address: string;
  sign(transaction: Transaction): Promise<SignedSvmTransaction>;
  /** Simulates a fully signed transaction (signatures and blockhash checked): the error, or null when it would succeed. */
  simulate(wire: string): Promise<unknown>;
  /** Sends it without preflight (it was simulated); sending one the cluster has already is not an error. */
  broadcast(wire: string): Promise<void>;
  status(signature: string): Promise<SvmTransactionStatus>;
  /** The cluster's block height (`confirmed`): a blockhash is good for 150 blocks. */
  blockHeight(): Promise<bigint>;
  /** The fee payer's SOL, in lamports. */
  balance(): Promise<bigint>;
}

/** `key`: the 64-byte keypair (seed, public key) the configuration checked (src/internal/solanaFeePayerKey.ts). */
export function createSvmFeePayer(params: { key: Uint8Array; rpc: SolanaRpcPool }): SvmFeePayer {
  const address = getBase58Decoder().decode(params.key.subarray(32));
  // WebCrypto imports keys asynchronously; the factory stays synchronous like the EVM relayer's.
  let keys: ReturnType<typeof createKeyPairFromBytes> | undefined;
  const { rpc } = params;
  return {
    chain: 'solana',
    address,
    async sign(transaction) {
      keys ??= createKeyPairFromBytes(params.key);
      const signature = await signBytes((await keys).privateKey, transaction.messageBytes);
      const signed = { ...transaction, signatures: { ...transaction.signatures, [address]: signature } } as Transaction;
      return { signature: getBase58Decoder().decode(signature), wire: getBase64EncodedWireTransaction(signed) };
    },
    async simulate(wire) {
      const { value } = await rpc.call('simulateTransaction', (client) =>
        client.simulateTransaction(wire as Base64EncodedWireTransaction, { encoding: 'base64', sigVerify: true, commitment: 'confirmed' }),
      );
      return value.err ?? null;
    },
    async broadcast(wire) {
      await rpc.call('sendTransaction', (client) =>
        client.sendTransaction(wire as Base64EncodedWireTransaction, { encoding: 'base64', skipPreflight: true, maxRetries: 0n }),
      );
    },
    async status(signature) {
      const { value } = await rpc.call('getSignatureStatuses', (client) =>
        client.getSignatureStatuses([signature as Signature], { searchTransactionHistory: true }),
      );
      // 'processed' can still be dropped with its fork; 'confirmed' practically cannot.
      const status = value[0];
      return status && status.confirmationStatus !== 'processed' ? { landed: true, err: status.err } : { landed: false };
    },
    blockHeight: () => rpc.call('getBlockHeight', (client) => client.getBlockHeight({ commitment: 'confirmed' })),
    async balance() {
      const { value } = await rpc.call('getBalance', (client) => client.getBalance(address as Address, { commitment: 'confirmed' }));
      return value;
    },
  };
}
