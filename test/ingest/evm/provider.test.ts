import http from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, numberToHex, pad, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { TOPIC_FILTER_LIMIT } from '../../../src/ingest/evm/transfers.ts';
import { mintMany } from '../../helpers/batchMinter.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitProcessed } from '../../helpers/evmIngest.ts';

const db = useTestDatabase('ingest_provider');
const chain = 'arbitrum' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;

/** Largest eth_getLogs range the "provider" accepts, as public endpoints cap it. */
const MAX_RANGE = 3n;
/**
 * Most logs one eth_getLogs may return (Infura-style cap). A block here holds 20 transfers, so
 * even a single block must be narrowed to slices of the recipients.
 */
const MAX_RESULTS = 8;

/** Requests the "provider" serves per 100 ms window; more get HTTP 429 (a 100 req/s plan). */
const RATE_PER_WINDOW = 10;

/**
 * A provider in front of anvil with a public endpoint's policies: eth_getLogs over more than
 * MAX_RANGE blocks gets the JSON-RPC error Alchemy-style providers send, one returning more than
 * MAX_RESULTS logs the Infura-style one, and requests above
 * RATE_PER_WINDOW per 100 ms get HTTP 429. Everything else is anvil's own answer.
 */
async function startProvider(target: string) {
  let window = 0;
  let inWindow = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const now = Math.floor(Date.now() / 100);
    if (now !== window) {
      window = now;
      inWindow = 0;
    }
    inWindow += 1;
    if (inWindow > RATE_PER_WINDOW) {
      res
        .writeHead(429, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: 429, message: 'Too Many Requests' } }));
      return;
    }
    if (body.method === 'eth_getLogs') {
      const { fromBlock, toBlock } = body.params[0];
      if (BigInt(toBlock) - BigInt(fromBlock) + 1n > MAX_RANGE) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: body.id,
            error: { code: -32600, message: `Log response size exceeded. You can make eth_getLogs requests with up to a ${MAX_RANGE} block range.` },
          }),
        );
        return;
      }
    }
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await upstream.text();
    if (body.method === 'eth_getLogs' && (JSON.parse(text).result?.length ?? 0) > MAX_RESULTS) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32005, message: `query returned more than ${MAX_RESULTS} results` } }));
      return;
    }
    if (body.method === 'eth_getLogs') {
      // Like many providers, this one's logs carry no blockTimestamp: block times must come from headers.
      const answer = JSON.parse(text);
      for (const log of answer.result ?? []) delete log.blockTimestamp;
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      return;
    }
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

let anvil: Anvil;
let provider: Awaited<ReturnType<typeof startProvider>>;
let run: ReturnType<typeof startIngest>;

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  provider = await startProvider(anvil.rpcUrl);
});
afterAll(async () => {
  await run?.ingest.stop();
  await provider?.close();
  await anvil?.stop();
});

test('with more wallets than fit a topic filter, refused ranges shrink, a too-full block is narrowed by recipients, 429s slow down, and every transfer is stored once', async () => {
  const wallets = Array.from({ length: TOPIC_FILTER_LIMIT + 100 }, (_, i) => getAddress(pad(numberToHex(0x7000 + i), { size: 20 })));
  await merchantWithWallets(db.store, chain, wallets);
  const unwatched = getAddress(pad(numberToHex(0xdead), { size: 20 }));
  const start = await anvil.blockNumber();
  // 30 blocks of 20 transfers: 19 to watched wallets spread over the list, 1 to an unwatched address.
  const recipients = [...wallets.filter((_, i) => i % 31 === 0).slice(0, 19), unwatched];
  await mintMany(anvil, { token: usdc, recipients, count: 600, firstAmount: 10n, perTx: 20 });
  const head = await anvil.blockNumber();

  const ingestStarted = Date.now();
  run = startIngest({ db, chain, http: [provider.url], backfillBlocks: Number(head - start) });
  await waitProcessed(db.store, chain, head, 60_000).catch((error) => {
    console.log(
      run.logs.lines
        .slice(-15)
        .map((line) => JSON.stringify(line).slice(0, 400))
        .join('\n'),
    );
    throw error;
  });

  console.log(`backfill through the provider took ${Date.now() - ingestStarted} ms`);
  const rows = await transfers(db.store, chain);
  expect(rows).toHaveLength(570);
  expect(new Set(rows.map((row) => `${row.tx_hash}:${row.log_index}`)).size).toBe(570);
  expect(rows.every((row) => row.to_address !== unwatched && wallets.includes(row.to_address as Address))).toBe(true);
  // Every transfer has its block's own time, though the logs carried none.
  const { rows: times } = await db.store.query<{ block_number: bigint; block_time: Date | null }>(
    'SELECT DISTINCT block_number, block_time FROM transfers WHERE chain = $1 ORDER BY block_number',
    [chain],
  );
  for (const { block_number, block_time } of times) {
    const block = await anvil.client.getBlock({ blockNumber: block_number });
    expect(block_time?.getTime()).toBe(Number(block.timestamp) * 1000);
  }
  expect(await metricValue(run.metrics, 'svc_ingest_rpc_errors_total', { chain, method: 'eth_getLogs', kind: 'range' })).toBeGreaterThan(0);
  const rateLimited = await run.metrics.getSingleMetric('svc_ingest_rpc_errors_total')!.get();
  expect(rateLimited.values.filter((value) => value.labels.kind === 'rate').reduce((sum, value) => sum + value.value, 0)).toBeGreaterThan(0);
  expect(run.logs.find((line) => line.msg === 'RPC endpoint rate-limits us; slowing down')).toBeDefined();
}, 90_000);
