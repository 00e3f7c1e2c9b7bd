import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { CHAIN_NAMES, type ChainName } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createTransactionLookups, type TransactionLookups } from '../../src/ingest/lookup.ts';

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const word = (address: string) => `0x${address.slice(2).toLowerCase().padStart(64, '0')}`;
const hex = (value: bigint | number) => `0x${value.toString(16)}`;
const blockHash = (block: bigint) => `0x${block.toString(16).padStart(64, 'b')}`;

/** One ERC-20 transfer a scripted transaction emits. */
export interface ScriptedTransfer {
  token: string;
  from: string;
  to: string;
  amount: bigint;
}

/**
 * A real EVM JSON-RPC server on loopback that knows only the transactions a test gives it
 * (`eth_getTransactionReceipt` with their `Transfer` logs, `eth_getBlockByNumber`): for tests of
 * refund completion whose payments are stored as the ingester stores them, without a chain. The
 * gateway's real lookups (src/ingest/lookup.ts) talk to it over HTTP; confirmations come from
 * the chain head stored in the database, as for payments. The anvil tests use a real chain.
 */
export async function startScriptedChainRpc() {
  const receipts = new Map<string, { status: '0x0' | '0x1'; block: bigint; transfers: ScriptedTransfer[] }>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const call = JSON.parse(body) as { id: number; method: string; params: string[] };
      let result: unknown = null;
      if (call.method === 'eth_getBlockByNumber') result = { hash: blockHash(BigInt(call.params[0]!)), timestamp: hex(1_700_000_000) };
      if (call.method === 'eth_getTransactionReceipt') {
        const hash = call.params[0]!.toLowerCase();
        const found = receipts.get(hash);
        result = found && {
          transactionHash: hash,
          status: found.status,
          blockNumber: hex(found.block),
          blockHash: blockHash(found.block),
          logs: found.transfers.map((transfer, index) => ({
            address: transfer.token.toLowerCase(),
            topics: [TRANSFER_TOPIC, word(transfer.from), word(transfer.to)],
            data: `0x${transfer.amount.toString(16).padStart(64, '0')}`,
            blockNumber: hex(found.block),
            blockHash: blockHash(found.block),
            transactionHash: hash,
            logIndex: hex(index),
            removed: false,
          })),
        };
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Records a mined transaction in `block` (default 1: deeper than any test's stored head asks). */
    addTransaction(hash: string, transfers: ScriptedTransfer[], options: { failed?: boolean; block?: bigint } = {}) {
      receipts.set(hash.toLowerCase(), { status: options.failed ? '0x0' : '0x1', block: options.block ?? 1n, transfers });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A scripted chain RPC for one test file (started before its tests, closed after) and the
 * gateway's {@link TransactionLookups} over it for every EVM chain, to give `buildApi`/`useApi`.
 */
export function useScriptedChainRpc() {
  let rpc: Awaited<ReturnType<typeof startScriptedChainRpc>> | undefined;
  let lookups: TransactionLookups | undefined;
  beforeAll(async () => {
    rpc = await startScriptedChainRpc();
    const config = Object.fromEntries(CHAIN_NAMES.map((chain) => [chain, { http: chain === 'solana' ? [] : [rpc!.url], ws: [] as string[] }]));
    lookups = createTransactionLookups({
      config: { rpc: config as Record<ChainName, { http: string[]; ws: string[] }> },
      logger: createLogger({ level: 'silent' }),
      metrics: createMetricsRegistry({ defaultMetrics: false }),
    });
  });
  afterAll(async () => {
    await lookups?.close();
    await rpc?.close();
  });
  return {
    get rpc() {
      return rpc!;
    },
    /** Looks up through the scripted server (the API is built in beforeAll, after the server started). */
    lookups: {
      available: (chain) => lookups!.available(chain),
      lookup: (chain, hash) => lookups!.lookup(chain, hash),
      isValidContractSignature: (check) => lookups!.isValidContractSignature(check),
      callContract: (chain, call) => lookups!.callContract(chain, call),
      close: async () => {},
    } satisfies TransactionLookups,
  };
}
