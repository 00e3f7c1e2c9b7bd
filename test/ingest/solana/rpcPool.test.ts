import http from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';
import { createIngestMetrics } from '../../../src/ingest/metrics.ts';
import { createSolanaRpcPool } from '../../../src/ingest/solana/rpc.ts';
import { captureLogger, metricValue } from '../../helpers/evmIngest.ts';

let rpc: SolanaTestRpc;
let throttled: http.Server;
let throttledUrl: string;
const hits: number[] = [];

beforeAll(async () => {
  rpc = await startSolanaRpc();
  // A provider over its plan: every request gets HTTP 429, as Solana RPC providers answer.
  throttled = http.createServer((req, res) => {
    hits.push(Date.now());
    req.resume();
    req.on('end', () => res.writeHead(429, { 'content-type': 'text/plain' }).end('Too Many Requests'));
  });
  await new Promise<void>((resolve) => throttled.listen(0, '127.0.0.1', resolve));
  throttledUrl = `http://127.0.0.1:${(throttled.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => throttled?.close(resolve));
  await rpc?.stop();
});

test('a 429 from a Solana URL slows that URL down and fails over to the next, as on EVM chains (counted as kind rate, the URL not rested)', async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const { logger, logs } = captureLogger();
  const pool = createSolanaRpcPool({ urls: [throttledUrl, rpc.url], logger, metrics: createIngestMetrics(registry) });
  for (let i = 0; i < 4; i++) expect(await pool.call('getSlot', (client) => client.getSlot({ commitment: 'confirmed' }))).toBeGreaterThanOrEqual(0n);
  // Asked first on every call (a resting URL would have been skipped), its requests spaced out
  // more each time (the exact spacings are pinned by the log lines below). Measured where the
  // requests arrive, one gap can shrink by a scheduling delay of the one before it, so the check
  // is on the whole span: at least the first two spacings (20 + 30 ms); without spacing the four
  // round trips take a few milliseconds.
  expect(hits).toHaveLength(4);
  expect(hits[3]! - hits[0]!).toBeGreaterThanOrEqual(50);
  const endpoint = `0:${new URL(throttledUrl).host}`;
  expect(await metricValue(registry, 'svc_ingest_rpc_errors_total', { chain: 'solana', method: 'getSlot', endpoint, kind: 'rate' })).toBe(4);
  expect(await metricValue(registry, 'svc_ingest_rpc_errors_total', { chain: 'solana', endpoint, kind: 'endpoint' })).toBe(0);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the logger writes asynchronously
  expect(logs.lines.filter((line) => line.msg === 'RPC endpoint rate-limits us; slowing down').map((line) => line.spacing_ms)).toEqual([20, 30, 45, 68]);
});

test('getTransaction in one JSON-RPC batch: answers in order, a 429 is a rate limit, a URL refusing batches is asked one call at a time, an error entry fails the call', async () => {
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10_000_000n);
  const owner = await rpc.wallet();
  const paid = [];
  for (const amount of [1_000_001n, 1_000_002n, 1_000_003n]) paid.push(await rpc.pay({ from: payer, to: owner.address, currency: 'USDC', amount }));
  const config = { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 };
  const unknown = '1111111111111111111111111111111111111111111111111111111111111111';
  const params = [...paid.map((entry) => [entry.signature, config]), [unknown, config]];

  // A provider that takes single calls only (answers a batch with one error object), proxied to the real one.
  const received: string[] = [];
  const singlesOnly = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    received.push(Array.isArray(body) ? 'batch' : 'single');
    res.setHeader('content-type', 'application/json');
    if (Array.isArray(body)) return res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch requests are not supported' } }));
    const upstream = await fetch(rpc.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    res.end(await upstream.text());
  });
  await new Promise<void>((resolve) => singlesOnly.listen(0, '127.0.0.1', resolve));
  try {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const { logger } = captureLogger();
    const singlesUrl = `http://127.0.0.1:${(singlesOnly.address() as { port: number }).port}`;
    for (const urls of [[throttledUrl, rpc.url], [singlesUrl]]) {
      const pool = createSolanaRpcPool({ urls, logger, metrics: createIngestMetrics(registry) });
      const answers = await pool.batch<{ slot: number; transaction: { signatures: string[] } } | null>('getTransaction', params);
      expect(answers.map((answer) => answer?.transaction.signatures[0] ?? null)).toEqual([...paid.map((entry) => entry.signature), null]);
      expect(answers[0]!.slot).toBe(Number(paid[0]!.slot));
      // A JSON-RPC error on one entry fails the batch as it would fail that call (the account is retried).
      const failed = await pool
        .batch('getTransaction', [
          [paid[0]!.signature, config],
          [paid[1]!.signature, { encoding: 'base58' }],
        ])
        .catch((error: Error) => error);
      expect(failed).toBeInstanceOf(Error);
      expect((failed as Error).message).toMatch(/getTransaction failed on every RPC URL/);
    }
    const endpoint = `0:${new URL(throttledUrl).host}`;
    expect(
      await metricValue(registry, 'svc_ingest_rpc_errors_total', { chain: 'solana', method: 'getTransaction', endpoint, kind: 'rate' }),
    ).toBeGreaterThanOrEqual(1);
    // One batch refused, then single calls only: 4 for the first batch, then 2 for the second (the error stops the rest).
    expect(received[0]).toBe('batch');
    expect(received.slice(1).every((kind) => kind === 'single')).toBe(true);
  } finally {
    await new Promise((resolve) => singlesOnly.close(resolve));
  }
});
