/**
 * A flaky JSON-RPC provider in front of anvil, for the ingesters: a share of requests fails (a 502,
 * a 429 with Retry-After, or a connection cut before any answer), and `outage(ms)` fails every
 * request for a while (the provider is down). Successful requests are forwarded untouched.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

export async function startFlakyRpc(params: { upstream: string; failureRate: number }) {
  let downUntil = 0;
  const stats = { forwarded: 0, failed: 0, cut: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const roll = Math.random();
      if (Date.now() < downUntil || roll < params.failureRate / 3) {
        stats.failed++;
        res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
        return;
      }
      if (roll < (2 * params.failureRate) / 3) {
        stats.failed++;
        res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"error":"rate limited"}');
        return;
      }
      if (roll < params.failureRate) {
        stats.cut++;
        req.socket.destroy();
        return;
      }
      try {
        const answer = await request(params.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
        const body = Buffer.from(await answer.body.arrayBuffer());
        stats.forwarded++;
        res.writeHead(answer.statusCode, { 'content-type': 'application/json' }).end(body);
      } catch {
        stats.failed++;
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats,
    /** Every request fails for `ms`. */
    outage(ms: number) {
      downUntil = Date.now() + ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
