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
