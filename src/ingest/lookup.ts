import { decodeFunctionResult, encodeFunctionData, getAddress, type Hex } from 'viem';
import type { Registry } from 'prom-client';
import { signature as toSignature } from '@solana/kit';
import type { ChainName, Config } from '../internal/config.ts';
import { loadChains, type ChainConfig } from '../internal/chains.ts';
import type { Logger } from '../internal/logger.ts';
import { UnavailableError } from '../internal/errors.ts';
import { createIngestMetrics } from './metrics.ts';
import { createRpc, RpcRequestRejected, type Rpc } from './evm/rpc.ts';
import { parseTransfers, type ObservedTransfer, type RpcLog } from './evm/transfers.ts';
import { upsertTransfers } from './evm/persist.ts';
import type { Sql } from '../store/index.ts';
import { createSolanaRpcPool, type SolanaRpcPool } from './solana/rpc.ts';
import { parseTokenCredits, type RpcTransaction } from './solana/parse.ts';

/**
 * Timeout of one lookup request. A payer is waiting on the answer, so it is shorter than the
 * ingesters' 10 s; the pool's failover still tries every URL.
 */
const LOOKUP_TIMEOUT_MS = 5_000;

/** One token movement a transaction made, as the ingesters would store it (canonical addresses, base units). */
export interface TokenMovement {
  /** EVM: the log index; solana: the credited token account's index (the transfers row's `log_index`). */
  index: number;
  token: string;
  from: string | null;
  /** The receiving wallet (solana: the owner of the credited token account). */
  to: string;
  amount: bigint;
}

/** What one chain says about one transaction. */
export type LookedUpTransaction =
  | { found: false }
  | {
      found: true;
      chain: ChainName;
      failed: boolean;
      blockNumber: bigint;
      blockTime: Date | null;
      movements: TokenMovement[];
      /** EVM: the movements as the ingester's `persist.ts` stores them (for {@link storeIfFinal}). */
      observed?: ObservedTransfer[];
    };

/** Looks transactions up on the chains this process has RPC URLs for (the same URLs, pool and parsers as the ingesters). */
export interface TransactionLookups {
  /** Whether `chain` has an RPC URL configured. */
  available(chain: ChainName): boolean;
  /**
   * Fetches a transaction (EVM: its receipt and block; solana: getTransaction at `confirmed`) and
   * the movements of the chain's configured tokens it made, to any recipient.
   * @throws {UnavailableError} no RPC URL for the chain, or every URL failed.
   */
  lookup(chain: ChainName, txHash: string): Promise<LookedUpTransaction>;
  /**
   * Whether the contract at `address` accepts `signature` over `hash` (ERC-1271), at the latest
   * block; false for an address without code or a call that reverts.
   * @throws {UnavailableError} no RPC URL for the chain, or every URL failed.
   */
  isValidContractSignature(params: { chain: ChainName; address: string; hash: Hex; signature: Hex }): Promise<boolean>;
  /**
   * One read-only `eth_call` to `to` with `data` at the latest block (price feeds: src/pricing):
   * its return data, or null when the call reverts or the address answers nothing (no code).
   * @throws {UnavailableError} no RPC URL for the chain (or not an EVM chain), or every URL failed.
   */
  callContract(chain: ChainName, call: { to: string; data: Hex }): Promise<Hex | null>;
  close(): Promise<void>;
}

/** ERC-1271's one function and its magic answer. */
const ERC1271_ABI = [
  {
    type: 'function',
    name: 'isValidSignature',
    stateMutability: 'view',
    inputs: [
      { name: 'hash', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [{ name: 'magicValue', type: 'bytes4' }],
  },
] as const;
const ERC1271_MAGIC = '0x1626ba7e';

interface EvmReceipt {
  status: Hex;
  blockNumber: Hex;
  blockHash: string;
  logs: RpcLog[];
}

/**
 * The API role's read-only access to the chains, for payers' transaction proofs
 * (POST /checkout/{id}/transactions): it uses the configured RPC URLs directly through the
 * ingesters' endpoint pool (failover, cooldowns, adaptive rate, `svc_ingest_rpc_*` metrics), one
 * client per chain made on first use. It writes nothing itself: the ingesters store transfers,
 * except those of a final block (`storeIfFinal`; docs/checkout.md, "Proving a payment").
 */
export function createTransactionLookups(params: {
  config: Pick<Config, 'rpc'>;
  logger: Logger;
  metrics: Registry;
  chains?: Partial<Record<ChainName, ChainConfig>>;
  timeoutMs?: number;
}): TransactionLookups {
  const chains = params.chains ?? loadChains();
  const logger = params.logger.child({ stage: 'lookup' });
  const timeoutMs = params.timeoutMs ?? LOOKUP_TIMEOUT_MS;
  const evm = new Map<ChainName, Rpc>();
  let solana: SolanaRpcPool | undefined;
  const urlsOf = (chain: ChainName) => {
    const rpc = params.config.rpc[chain];
    return rpc.http.length > 0 ? rpc.http : chain === 'solana' ? [] : rpc.ws;
  };

  function evmRpc(chain: ChainName): Rpc {
    let rpc = evm.get(chain);
    if (!rpc) {
      rpc = createRpc({ chain, urls: urlsOf(chain), logger, metrics: createIngestMetrics(params.metrics), timeoutMs });
      evm.set(chain, rpc);
    }
    return rpc;
  }

  async function lookupEvm(chain: ChainConfig, txHash: string): Promise<LookedUpTransaction> {
    const rpc = evmRpc(chain.name);
    const receipt = await rpc.request<EvmReceipt | null>('eth_getTransactionReceipt', [txHash]);
    if (!receipt) return { found: false };
    const block = await rpc.request<{ hash: string; timestamp: Hex } | null>('eth_getBlockByNumber', [receipt.blockNumber, false]);
    // The receipt's block is no longer the chain's at that height (a reorg between the two calls,
    // or two URLs that disagree): as far as the chain now says, the transaction is not mined.
    if (!block || block.hash.toLowerCase() !== receipt.blockHash.toLowerCase()) return { found: false };
    const tokens = new Map(chain.tokens.map((token) => [token.address.toLowerCase(), token.address]));
    const logs = receipt.logs.map((log) => ({ ...log, blockTimestamp: block.timestamp }));
    const transfers = parseTransfers(logs, { tokens, watched: { canonical: (lower) => getAddress(lower) } });
    return {
      found: true,
      chain: chain.name,
      failed: BigInt(receipt.status) !== 1n,
      observed: transfers,
      blockNumber: BigInt(receipt.blockNumber),
      blockTime: new Date(Number(BigInt(block.timestamp)) * 1000),
      movements: transfers.map((transfer) => ({
        index: transfer.logIndex,
        token: transfer.token,
        from: transfer.from,
        to: transfer.to,
        amount: transfer.amount,
      })),
    };
  }

  async function lookupSolana(chain: ChainConfig, txHash: string): Promise<LookedUpTransaction> {
    solana ??= createSolanaRpcPool({ urls: urlsOf('solana'), logger, metrics: createIngestMetrics(params.metrics) });
    const transaction = (await solana.call('getTransaction', (client) =>
      client.getTransaction(toSignature(txHash), { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }),
    )) as unknown as RpcTransaction | null;
    if (!transaction) return { found: false };
    const mints = new Set(chain.tokens.map((token) => token.address));
    const tokenPrograms = new Set(chain.tokens.map((token) => token.tokenProgram ?? 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'));
    const credits = parseTokenCredits(transaction, { mints, tokenPrograms });
    return {
      found: true,
      chain: 'solana',
      failed: transaction.meta?.err !== null && transaction.meta?.err !== undefined,
      blockNumber: BigInt(transaction.slot),
      blockTime: transaction.blockTime === null || transaction.blockTime === undefined ? null : new Date(Number(transaction.blockTime) * 1000),
      movements: credits
        .filter((credit) => !credit.failed)
        .map((credit) => ({ index: credit.accountIndex, token: credit.mint, from: credit.from, to: credit.owner, amount: credit.amount })),
    };
  }

  return {
    available: (chain) => Boolean(chains[chain]) && urlsOf(chain).length > 0,
    async lookup(name, txHash) {
      const chain = chains[name];
      if (!chain || urlsOf(name).length === 0) throw new UnavailableError(`this gateway has no RPC URL for ${name}, so it cannot look transactions up there`);
      try {
        return chain.kind === 'solana' ? await lookupSolana(chain, txHash) : await lookupEvm(chain, txHash);
      } catch (error) {
        if (error instanceof UnavailableError) throw error;
        logger.warn({ msg: 'Transaction lookup failed', chain: name, tx_hash: txHash, err: error });
        throw new UnavailableError(`${name}: the chain's RPC did not answer; retry in a few seconds`, { cause: error });
      }
    },
    async isValidContractSignature({ chain, address, hash, signature }) {
      if (chain === 'solana' || !chains[chain] || urlsOf(chain).length === 0) {
        throw new UnavailableError(`this gateway has no RPC URL for ${chain}, so it cannot ask a contract wallet there`);
      }
      const data = encodeFunctionData({ abi: ERC1271_ABI, functionName: 'isValidSignature', args: [hash, signature] });
      let answer: Hex;
      try {
        answer = await evmRpc(chain).request<Hex>('eth_call', [{ to: address, data }, 'latest']);
      } catch (error) {
        // The node refusing the call itself (a revert: the contract's "no", or no such function) is a
        // "no"; anything else is the RPC's failure.
        if (error instanceof RpcRequestRejected) return false;
        throw new UnavailableError(`${chain}: the chain's RPC did not answer; retry in a few seconds`, { cause: error });
      }
      if (!answer || answer === '0x') return false;
      try {
        return decodeFunctionResult({ abi: ERC1271_ABI, functionName: 'isValidSignature', data: answer }).toLowerCase() === ERC1271_MAGIC;
      } catch {
        return false;
      }
    },
    async callContract(chain, call) {
      if (chain === 'solana' || !chains[chain] || urlsOf(chain).length === 0) {
        throw new UnavailableError(`this gateway has no RPC URL for ${chain}, so it cannot read a contract there`);
      }
      let answer: Hex;
      try {
        answer = await evmRpc(chain).request<Hex>('eth_call', [{ to: call.to, data: call.data }, 'latest']);
      } catch (error) {
        if (error instanceof RpcRequestRejected) return null;
        throw new UnavailableError(`${chain}: the chain's RPC did not answer; retry in a few seconds`, { cause: error });
      }
      return answer && answer !== '0x' ? answer : null;
    },
    async close() {
      await Promise.all([...evm.values()].map((rpc) => rpc.close()));
    },
  };
}

/**
 * Stores a looked-up EVM transaction's transfers into `wallet` exactly as the ingester does
 * (`upsertTransfers`), but only when its block is at or below the chain's finalized block as the
 * ingester last stored it: a final block is never reorged, so the row can never need the
 * ingester's reorg handling (which only covers blocks it linked itself), and when the ingester
 * reaches that block its own write of the same log changes nothing. This is what lets a proof
 * count at once while the ingester is behind (a backfill, a restart). Above the finalized block
 * nothing is stored: the ingester stores it. Returns how many rows were written.
 */
export async function storeIfFinal(sql: Sql, transaction: LookedUpTransaction, params: { wallet: string }): Promise<number> {
  if (!transaction.found || transaction.failed || !transaction.observed) return 0;
  const { rows } = await sql.query<{ finalized_block: bigint | null }>('SELECT finalized_block FROM chain_heads WHERE livemode AND chain = $1', [
    transaction.chain,
  ]);
  const finalized = rows[0]?.finalized_block;
  if (finalized === null || finalized === undefined || transaction.blockNumber > BigInt(finalized)) return 0;
  return upsertTransfers(
    sql,
    transaction.chain,
    transaction.observed.filter((transfer) => transfer.to === params.wallet),
  );
}
