import http from 'node:http';
import { afterAll, expect, test } from 'vitest';
import { RetryableError } from '../../src/internal/errors.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createIngestMetrics } from '../../src/ingest/metrics.ts';
import { createRpc } from '../../src/ingest/evm/rpc.ts';
import { RpcRequestRejected } from '../../src/ingest/rpcPool.ts';
import { captureLogger, metricValue } from '../helpers/evmIngest.ts';

/** A JSON-RPC server on localhost whose every answer `reply` decides; `hits` counts requests. */
async function server(reply: (body: { id: number; method: string }) => { status: number; body: unknown }) {
  const hits: number[] = [];
  const srv = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    hits.push(Date.now());
    const answer = reply(body);
    if (typeof answer.body === 'string') res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
    else res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  servers.push(srv);
  return { url: `http://127.0.0.1:${port}`, label: `127.0.0.1:${port}`, hits };
}
const servers: http.Server[] = [];
afterAll(async () => {
  for (const srv of servers) await new Promise((resolve) => srv.close(resolve));
});

const ok = (body: { id: number }) => ({ status: 200, body: { jsonrpc: '2.0', id: body.id, result: '0x10' } });

function rpcOver(urls: string[]) {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const { logger, logs } = captureLogger();
  const rpc = createRpc({ chain: 'polygon', urls, logger, metrics: createIngestMetrics(registry), timeoutMs: 2_000 });
  return { rpc, registry, logs };
}

test('a 5xx rests the URL: the call fails over, and the next call skips the resting URL', async () => {
  const sick = await server(() => ({ status: 503, body: 'Service Unavailable' }));
  const healthy = await server(ok);
  const { rpc, registry } = rpcOver([sick.url, healthy.url]);
  expect(await rpc.request('eth_blockNumber')).toBe('0x10');
  expect(await rpc.request('eth_blockNumber')).toBe('0x10');
  expect(sick.hits).toHaveLength(1);
  expect(healthy.hits).toHaveLength(2);
  expect(await metricValue(registry, 'svc_ingest_rpc_errors_total', { chain: 'polygon', endpoint: `0:${sick.label}`, kind: 'endpoint' })).toBe(1);
});

test('a 429 slows that URL down without resting it: the call moves on, and the next request to it waits its spacing', async () => {
  const throttled = await server((body) => ({ status: 429, body: { jsonrpc: '2.0', id: body.id, error: { code: 429, message: 'Too Many Requests' } } }));
  const healthy = await server(ok);
  const { rpc, registry, logs } = rpcOver([throttled.url, healthy.url]);
  for (let i = 0; i < 5; i++) expect(await rpc.request('eth_blockNumber')).toBe('0x10');
  // Not rested: every call asked the throttled URL first again, each 429 stretched its spacing
  // 1.5 times (20, 30, 45, 68 ms), and its requests came that far apart: 20 + 30 + 45 = 95 ms from
  // the second to the fifth as sent. Arrival times shrink that when a busy machine delays one
  // arrival (83 ms seen under a loaded CI run), so the bound is 60 ms: without the spacing the four
  // arrive within a few ms. The exact spacings are pinned by the log lines below.
  expect(throttled.hits).toHaveLength(5);
  expect(healthy.hits).toHaveLength(5);
  expect(throttled.hits[4]! - throttled.hits[1]!).toBeGreaterThanOrEqual(60);
  expect(await metricValue(registry, 'svc_ingest_rpc_errors_total', { chain: 'polygon', endpoint: `0:${throttled.label}`, kind: 'rate' })).toBe(5);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the logger writes asynchronously
  const slowed = logs.lines.filter((line) => line.msg === 'RPC endpoint rate-limits us; slowing down').map((line) => line.spacing_ms);
  expect(slowed).toEqual([20, 30, 45, 68, 101]);
});

test('a JSON-RPC error about the request itself is thrown at once, to no other URL, as a retryable RpcRequestRejected', async () => {
  const strict = await server((body) => ({ status: 200, body: { jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'invalid params' } } }));
  const other = await server(ok);
  const { rpc } = rpcOver([strict.url, other.url]);
  const error = (await rpc.request('eth_getBlockByNumber', ['0x1', false]).then(
    () => undefined,
    (caught: unknown) => caught,
  )) as RpcRequestRejected;
  expect(error).toBeInstanceOf(RpcRequestRejected);
  expect(error).toBeInstanceOf(RetryableError);
  expect(error.kind).toBe('rejected');
  expect(other.hits).toHaveLength(0);
});

test('when every URL fails, the call retries in rounds with growing waits, then throws a RetryableError', async () => {
  const dead = await server(() => ({ status: 500, body: 'Internal Server Error' }));
  const { rpc } = rpcOver([dead.url]);
  const started = Date.now();
  const error = (await rpc.request('eth_blockNumber').then(
    () => undefined,
    (caught: unknown) => caught,
  )) as Error;
  expect(error).toBeInstanceOf(RetryableError);
  expect(error.message).toBe('polygon: eth_blockNumber failed on every RPC URL');
  // Six rounds: 0.25 + 0.5 + 1 + 2 + 4 + 8 s of waits would be 15.75 s; the resting URL is still
  // tried each round (it is the one that wakes first), so every round asked it once.
  expect(dead.hits.length).toBe(6);
  expect(Date.now() - started).toBeGreaterThanOrEqual(15_000);
}, 30_000);
