import http from 'node:http';
import { afterAll, expect, test } from 'vitest';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';
import { createIngestMetrics } from '../../../src/ingest/metrics.ts';
import { BATCH_SIZE, createRpc } from '../../../src/ingest/evm/rpc.ts';
import { RpcRequestRejected } from '../../../src/ingest/rpcPool.ts';
import { captureLogger } from '../../helpers/evmIngest.ts';

type Call = { id: number; method: string; params: unknown[] };

/** A JSON-RPC server whose answer to each HTTP request (one call or a batch) `reply` decides; `bodies` keeps what came. */
async function server(reply: (body: Call | Call[]) => { status: number; body: unknown }) {
  const bodies: (Call | Call[])[] = [];
  const srv = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as Call | Call[];
    bodies.push(body);
    const answer = reply(body);
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  servers.push(srv);
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`, bodies };
}
const servers: http.Server[] = [];
afterAll(async () => {
  for (const srv of servers) await new Promise((resolve) => srv.close(resolve));
});

/** Answers each call with its own first param, so an answer shows which call it belongs to. */
const echo = (call: Call) => ({ jsonrpc: '2.0', id: call.id, result: call.params[0] });

function rpcOver(url: string) {
  const { logger, logs } = captureLogger();
  const rpc = createRpc({
    chain: 'polygon',
    urls: [url],
    logger,
    metrics: createIngestMetrics(createMetricsRegistry({ defaultMetrics: false })),
    timeoutMs: 2_000,
  });
  return { rpc, logs };
}

const numbers = (count: number) => Array.from({ length: count }, (_, i) => [`0x${i.toString(16)}`, false]);

test('a batch goes as one HTTP request per BATCH_SIZE calls, and the answers come back in the calls’ order even when the node reorders them', async () => {
  const node = await server((body) => ({ status: 200, body: Array.isArray(body) ? body.map(echo).reverse() : echo(body) }));
  const { rpc } = rpcOver(node.url);
  const calls = numbers(BATCH_SIZE + 8);
  expect(await rpc.requestBatch('eth_getBlockByNumber', calls)).toEqual(calls.map((call) => call[0]));
  expect(node.bodies).toHaveLength(2);
  expect((node.bodies[0] as Call[]).length).toBe(BATCH_SIZE);
  expect((node.bodies[1] as Call[]).length).toBe(8);
});

test('a node without batches (one JSON-RPC error for the whole batch) gets the calls one by one, then and from then on', async () => {
  const node = await server((body) =>
    Array.isArray(body)
      ? { status: 200, body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } } }
      : { status: 200, body: echo(body) },
  );
  const { rpc, logs } = rpcOver(node.url);
  expect(await rpc.requestBatch('eth_getBlockByNumber', numbers(3))).toEqual(['0x0', '0x1', '0x2']);
  expect(await rpc.requestBatch('eth_getBlockByNumber', numbers(2))).toEqual(['0x0', '0x1']);
  // One refused batch, then five single calls.
  expect(node.bodies.filter((body) => Array.isArray(body))).toHaveLength(1);
  expect(node.bodies.filter((body) => !Array.isArray(body))).toHaveLength(5);
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(logs.lines.some((line) => line.msg === 'RPC endpoint refuses JSON-RPC batches; sending calls one by one')).toBe(true);
});

test('one call’s error in a batch fails it as that call would fail alone: a request error is a RpcRequestRejected', async () => {
  const node = await server((body) => ({
    status: 200,
    body: (body as Call[]).map((call) => (call.id === 1 ? { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'header not found' } } : echo(call))),
  }));
  const { rpc } = rpcOver(node.url);
  const error = await rpc.requestBatch('eth_getBlockByNumber', numbers(3)).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(RpcRequestRejected);
  expect((error as RpcRequestRejected).kind).toBe('rejected');
});

test('a throttled batch (HTTP 429) is the pool’s: slowed down and sent again whole, not taken for a node without batches', async () => {
  let first = true;
  const node = await server((body) => {
    if (first) {
      first = false;
      return { status: 429, body: { jsonrpc: '2.0', id: null, error: { code: 429, message: 'Too Many Requests' } } };
    }
    return { status: 200, body: (body as Call[]).map(echo) };
  });
  const { rpc } = rpcOver(node.url);
  expect(await rpc.requestBatch('eth_getBlockByNumber', numbers(3))).toEqual(['0x0', '0x1', '0x2']);
  expect(node.bodies).toHaveLength(2);
  expect(node.bodies.every((body) => Array.isArray(body))).toBe(true);
});
