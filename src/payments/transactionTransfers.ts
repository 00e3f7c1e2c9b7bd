import { createPublicClient, fallback, http } from 'viem';
import type { ChainName, Config } from '../internal/config.ts';
import { canonicalAddress } from '../internal/addresses.ts';
import { loadChains } from '../internal/chains.ts';
import { UnavailableError } from '../internal/errors.ts';
import { parseTokenCredits, type RpcTransaction } from '../ingest/solana/parse.ts';

/**
 * Reading one transaction's token transfers by its hash, through the chain's RPC, from the api
 * role (refund completion verifies the merchant's refund transaction with it). This is the one
 * isolated fetch: the ingesters read ranges of blocks and never a single transaction.
 */

/** One token movement in a transaction, addresses canonical, amount in base units. */
export interface TokenTransfer {
  /** Token contract (EVM) or mint (solana). */
  token: string;
  from: string;
  to: string;
  amount: bigint;
}

/** What the chain says about one transaction. */
export type TransactionTransfers =
  | { status: 'not_found' }
  | {
      status: 'failed' | 'succeeded';
      /** Block number (EVM) or slot (solana). */
      block: bigint;
      /** EVM: blocks from the transaction's block to the head, both counted; solana: null (the read's commitment is the rule). */
      confirmations: number | null;
      transfers: TokenTransfer[];
    };

/** Reads a transaction's token transfers; throws {@link UnavailableError} when no RPC answers. */
export interface TransactionReader {
  transfersOf(chain: ChainName, txHash: string): Promise<TransactionTransfers>;
}

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const TIMEOUT_MS = 10_000;
const DEFAULT_TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';

interface EvmReceipt {
  status: '0x0' | '0x1';
  blockNumber: `0x${string}`;
  logs: { address: string; topics: string[]; data: `0x${string}`; removed?: boolean }[];
}

/** The ERC-20 `Transfer` events of a receipt (topics: signature, from, to; data: amount). */
export function receiptTransfers(chain: ChainName, receipt: EvmReceipt): TokenTransfer[] {
  const transfers: TokenTransfer[] = [];
  for (const log of receipt.logs) {
    if (log.removed || log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC || log.topics.length !== 3 || log.data.length !== 66) continue;
    const token = canonicalAddress(chain, log.address);
    const from = canonicalAddress(chain, `0x${log.topics[1]!.slice(26)}`);
    const to = canonicalAddress(chain, `0x${log.topics[2]!.slice(26)}`);
    if (token && from && to) transfers.push({ token, from, to, amount: BigInt(log.data) });
  }
  return transfers;
}

function unavailable(chain: ChainName, error: unknown): UnavailableError {
  const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
  return new UnavailableError(`could not read the transaction from ${chain}'s RPC to verify it (${detail}); try again shortly`);
}

/**
 * The reader over the configured RPC URLs of each chain (`SVC_<CHAIN>_RPC_URL`, failover in
 * order). EVM: `eth_getTransactionReceipt` and `eth_blockNumber`. Solana: `getTransaction` at
 * commitment `confirmed` (the chain's confirmation rule for detection), parsed by the ingester's
 * own parser so a refund is read exactly as a payment would be.
 */
export function createRpcTransactionReader(config: Pick<Config, 'rpc'>): TransactionReader {
  const clients = new Map<ChainName, ReturnType<typeof createPublicClient>>();
  const clientOf = (chain: ChainName) => {
    let client = clients.get(chain);
    if (!client) {
      const urls = config.rpc[chain].http;
      if (urls.length === 0)
        throw new UnavailableError(`no RPC is configured for ${chain} (SVC_${chain.toUpperCase()}_RPC_URL), so its transactions cannot be verified`);
      client = createPublicClient({ transport: fallback(urls.map((url) => http(url, { timeout: TIMEOUT_MS, retryCount: 1 }))) });
      clients.set(chain, client);
    }
    return client;
  };

  async function evm(chain: ChainName, txHash: string): Promise<TransactionTransfers> {
    const client = clientOf(chain);
    let receipt: EvmReceipt | null;
    let head: bigint;
    try {
      receipt = (await client.request({ method: 'eth_getTransactionReceipt', params: [txHash as `0x${string}`] })) as EvmReceipt | null;
      if (!receipt) return { status: 'not_found' };
      head = BigInt(await client.request({ method: 'eth_blockNumber' }));
    } catch (error) {
      throw unavailable(chain, error);
    }
    const block = BigInt(receipt.blockNumber);
    const confirmations = head >= block ? Number(head - block + 1n) : 0;
    return { status: receipt.status === '0x1' ? 'succeeded' : 'failed', block, confirmations, transfers: receiptTransfers(chain, receipt) };
  }

  async function solana(txHash: string): Promise<TransactionTransfers> {
    const client = clientOf('solana');
    let transaction: RpcTransaction | null;
    try {
      transaction = (await client.request({
        method: 'getTransaction' as never,
        params: [txHash, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }] as never,
      })) as RpcTransaction | null;
    } catch (error) {
      throw unavailable('solana', error);
    }
    if (!transaction) return { status: 'not_found' };
    const tokens = loadChains().solana.tokens;
    const credits = parseTokenCredits(transaction, {
      mints: new Set(tokens.map((token) => token.address)),
      tokenPrograms: new Set(tokens.map((token) => token.tokenProgram ?? DEFAULT_TOKEN_PROGRAM)),
    });
    const failed = transaction.meta?.err !== null && transaction.meta?.err !== undefined;
    return {
      status: failed ? 'failed' : 'succeeded',
      block: BigInt(transaction.slot),
      confirmations: null,
      transfers: credits.filter((credit) => credit.from).map((credit) => ({ token: credit.mint, from: credit.from!, to: credit.owner, amount: credit.amount })),
    };
  }

  return { transfersOf: (chain, txHash) => (chain === 'solana' ? solana(txHash) : evm(chain, txHash)) };
}
