/**
 * A JSON-RPC proxy that behaves like a hosted provider in front of a local node, for the benches
 * (bench/ponder.ts): what a real chain's RPC does to an indexer that anvil on loopback does not.
 * - latency: every HTTP request waits 50-150 ms (uniform) before it is forwarded;
 * - `eth_getLogs` caps: a range over `maxBlockRange` blocks, or an answer over `maxResponseBytes`,
 *   is refused with the JSON-RPC error Infura and Alchemy send (code -32005, "query returned more
 *   than 10000 results" / "block range is too wide"), not a truncated answer;
 * - rate limit: more than `requestsPerSecond` requests in a sliding second get HTTP 429 with
 *   `Retry-After: 1`;
 * - failures: `errorRate` of the requests (1 %) get a bare 500, 502 or 503.
 * Randomness is seeded, so two tools meet the same kind of provider. A JSON-RPC batch counts as
 * one request (as providers bill the HTTP request) and its calls are each checked.
 */
import fs from 'node:fs';
import http from 'node:http';

export interface ProviderProxyOptions {
  /** The node behind the proxy. */
  target: string;
  latencyMs?: [number, number];
  maxBlockRange?: number;
  maxResponseBytes?: number;
  requestsPerSecond?: number;
  errorRate?: number;
  seed?: number;
}

/** What the proxy did, for the bench's report. */
export interface ProviderProxyStats {
  requests: number;
  calls: number;
  rateLimited: number;
  serverErrors: number;
  rangeRefusals: number;
  sizeRefusals: number;
  /** Calls per JSON-RPC method (a batch's calls each counted), to see where the requests go. */
  methods: Record<string, number>;
  /** HTTP requests that carried a JSON-RPC batch. */
  batches: number;
}

/** A small seeded PRNG (mulberry32): the same sequence of delays and failures each run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Call {
  jsonrpc: '2.0';
  id: unknown;
  method: string;
  params?: unknown[];
}

/** Starts the proxy on a free loopback port. */
export async function startProviderProxy(options: ProviderProxyOptions): Promise<{ url: string; stats: ProviderProxyStats; close(): Promise<void> }> {
  const [minLatency, maxLatency] = options.latencyMs ?? [50, 150];
  const maxBlockRange = options.maxBlockRange ?? 10_000;
  const maxResponseBytes = options.maxResponseBytes ?? 10 * 1024 * 1024;
  const requestsPerSecond = options.requestsPerSecond ?? 25;
  const errorRate = options.errorRate ?? 0.01;
  const random = seeded(options.seed ?? 28);
  const stats: ProviderProxyStats = { requests: 0, calls: 0, rateLimited: 0, serverErrors: 0, rangeRefusals: 0, sizeRefusals: 0, methods: {}, batches: 0 };
  const recent: number[] = [];

  const forward = async (body: string): Promise<string> => {
    const response = await fetch(options.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return response.text();
  };

  /** One call: refused by the range cap, or forwarded and refused by the size cap, or answered. */
  const answer = async (call: Call): Promise<unknown> => {
    stats.calls++;
    stats.methods[call.method] = (stats.methods[call.method] ?? 0) + 1;
    if (call.method === 'eth_getLogs') {
      const filter = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string; blockHash?: string };
      if (!filter.blockHash && filter.fromBlock?.startsWith('0x') && filter.toBlock?.startsWith('0x')) {
        const span = Number(BigInt(filter.toBlock) - BigInt(filter.fromBlock)) + 1;
        if (span > maxBlockRange) {
          stats.rangeRefusals++;
          return { jsonrpc: '2.0', id: call.id, error: { code: -32005, message: `block range is too wide: at most ${maxBlockRange} blocks per eth_getLogs` } };
        }
      }
    }
    const text = await forward(JSON.stringify(call));
    if (call.method === 'eth_getLogs' && Buffer.byteLength(text) > maxResponseBytes) {
      stats.sizeRefusals++;
      return { jsonrpc: '2.0', id: call.id, error: { code: -32005, message: 'query returned more than 10000 results: response size exceeded' } };
    }
    return JSON.parse(text);
  };

  // BENCH_PROXY_TRACE=file: one line per request (arrival ms, answer ms, status, methods), to see what waits on what.
  const trace = process.env.BENCH_PROXY_TRACE;
  const opened = Date.now();
  const traced = (arrived: number, status: number, body: string) => {
    if (!trace) return;
    let methods = '?';
    try {
      const parsed = JSON.parse(body) as Call | Call[];
      methods = (Array.isArray(parsed) ? parsed : [parsed])
        .map(
          (call) =>
            `${call.method}${call.method === 'eth_getLogs' || call.method === 'eth_getBlockByNumber' ? `(${JSON.stringify(call.params?.[0]).slice(0, 60)})` : ''}`,
        )
        .join(',');
    } catch {}
    fs.appendFileSync(trace, `${arrived - opened} ${Date.now() - opened} ${status} ${methods}\n`);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      stats.requests++;
      const now = Date.now();
      const end = res.end.bind(res);
      res.end = ((...args: unknown[]) => {
        traced(now, res.statusCode, Buffer.concat(chunks).toString('utf8'));
        return (end as (...a: unknown[]) => unknown)(...args);
      }) as typeof res.end;
      while (recent.length > 0 && recent[0]! <= now - 1000) recent.shift();
      const delay = minLatency + random() * (maxLatency - minLatency);
      const failure = random() < errorRate ? [500, 502, 503][Math.floor(random() * 3)]! : undefined;
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (recent.length >= requestsPerSecond) {
        stats.rateLimited++;
        res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"error":"too many requests"}');
        return;
      }
      recent.push(now);
      if (failure) {
        stats.serverErrors++;
        res.writeHead(failure, { 'content-type': 'text/plain' }).end('upstream error');
        return;
      }
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
        if (Array.isArray(parsed)) stats.batches++;
        const result = Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
      } catch {
        res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
