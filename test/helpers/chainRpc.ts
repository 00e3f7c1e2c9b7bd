import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { CHAIN_NAMES, type ChainName } from '../../src/internal/config.ts';
import { createRpcTransactionReader, type TransactionReader } from '../../src/payments/transactionTransfers.ts';

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const word = (address: string) => `0x${address.slice(2).toLowerCase().padStart(64, '0')}`;

/** One ERC-20 transfer a scripted transaction emits. */
export interface ScriptedTransfer {
  token: string;
  from: string;
  to: string;
  amount: bigint;
}

/**
 * A real EVM JSON-RPC server on loopback that knows only the transactions a test gives it
 * (`eth_getTransactionReceipt` with their `Transfer` logs, `eth_blockNumber`): for tests of
 * refund completion whose payments are stored as the ingester stores them, without a chain.
 * The gateway's real RPC reader talks to it over HTTP. The anvil tests use a real chain instead.
 */
export async function startScriptedChainRpc() {
  let head = 1_000n;
  const receipts = new Map<string, { status: '0x0' | '0x1'; block: bigint; transfers: ScriptedTransfer[] }>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const call = JSON.parse(body) as { id: number; method: string; params: string[] };
      let result: unknown = null;
      if (call.method === 'eth_blockNumber') result = `0x${head.toString(16)}`;
      if (call.method === 'eth_getTransactionReceipt') {
        const found = receipts.get(call.params[0]!.toLowerCase());
        result = found && {
          transactionHash: call.params[0],
          status: found.status,
          blockNumber: `0x${found.block.toString(16)}`,
          logs: found.transfers.map((transfer) => ({
            address: transfer.token.toLowerCase(),
            topics: [TRANSFER_TOPIC, word(transfer.from), word(transfer.to)],
            data: `0x${transfer.amount.toString(16).padStart(64, '0')}`,
            removed: false,
          })),
        };
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    /** Records a mined transaction at `block` (default: `depth` blocks below the head, 64 unless said). */
    addTransaction(hash: string, transfers: ScriptedTransfer[], options: { failed?: boolean; depth?: number } = {}) {
      receipts.set(hash.toLowerCase(), { status: options.failed ? '0x0' : '0x1', block: head - BigInt((options.depth ?? 64) - 1), transfers });
    },
    setHead(block: bigint) {
      head = block;
    },
    get head() {
      return head;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A scripted chain RPC for one test file (started before its tests, closed after) and a
 * {@link TransactionReader} over it for every EVM chain, to give `buildApi`/`useApi`.
 */
export function useScriptedChainRpc() {
  let rpc: Awaited<ReturnType<typeof startScriptedChainRpc>> | undefined;
  let reader: TransactionReader | undefined;
  beforeAll(async () => {
    rpc = await startScriptedChainRpc();
    const rpcConfig = Object.fromEntries(
      CHAIN_NAMES.map((chain) => [chain, { http: chain === 'solana' ? [] : [rpc!.url], ws: [] as string[] }]),
    ) as unknown as Record<ChainName, { http: string[]; ws: string[] }>;
    reader = createRpcTransactionReader({ rpc: rpcConfig });
  });
  afterAll(() => rpc?.close());
  return {
    get rpc() {
      return rpc!;
    },
    /** Reads through the scripted server (the API is built in beforeAll, after the server started). */
    reader: { transfersOf: (chain, hash) => reader!.transfersOf(chain, hash) } satisfies TransactionReader,
  };
}
