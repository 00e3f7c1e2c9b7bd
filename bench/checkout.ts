/**
 * Checkout benchmark: requests per second and latency of the hosted page, the JSON payment
 * instructions and the status endpoint (the whole API stack: per-IP rate limit in Postgres, the
 * session read, rendering), and how long a state change takes to reach many open live feeds.
 *
 *   npx tsx bench/checkout.ts [--seconds 5] [--connections 32] [--feeds 200]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54366). Client and server share this machine, so the numbers are a
 * floor for a dedicated host.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createMerchant } from '../src/accounts/index.ts';
import { createSession } from '../src/payments/sessions.ts';
import { benchApi, percentile } from './lib.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    feeds: { type: 'string', default: '200' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const FEEDS = Number(values.feeds);
const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

async function main() {
  const { store, box, url, close } = await benchApi('checkout', 54366);

  const { merchant } = await createMerchant(store, box, { name: 'Bench Shop' });
  const sessions = await store.transaction(async (sql) => {
    const made = [];
    for (let i = 0; i < Math.max(FEEDS, 100); i++) {
      made.push(
        await createSession(sql, {
          merchantId: merchant.id,
          livemode: false,
          amount: `${10 + i}.5`,
          currency: 'USDC',
          chain: 'polygon',
          merchantWallet: WALLET,
          monitorWindowSeconds: 86400,
        }),
      );
    }
    return made;
  });

  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  async function load(label: string, pathOf: (i: number) => string, headers: Record<string, string>) {
    const latencies: number[] = [];
    const deadline = performance.now() + SECONDS * 1000;
    let errors = 0;
    let counter = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline) {
          const started = performance.now();
          const response = await pool.request({ method: 'GET', path: pathOf(counter++ % sessions.length), headers });
          await response.body.arrayBuffer();
          if (response.statusCode !== 200) errors++;
          latencies.push(performance.now() - started);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(34)} ${(latencies.length / SECONDS).toFixed(0).padStart(6)} req/s   p50 ${percentile(latencies, 50).toFixed(1)} ms   p99 ${percentile(latencies, 99).toFixed(1)} ms   errors ${errors}`,
    );
  }

  // Warm-up (JIT, connection pools), not reported.
  for (const accept of ['application/json', 'text/html']) {
    await Promise.all(
      sessions
        .slice(0, 100)
        .map((session) => pool.request({ method: 'GET', path: `/checkout/${session.id}`, headers: { accept } }).then((r) => r.body.arrayBuffer())),
    );
  }
  console.log(`checkout bench: ${SECONDS} s per route, ${CONNECTIONS} connections, node ${process.version}, ${os.cpus().length} CPUs`);
  await load('GET /checkout/:id (JSON)', (i) => `/checkout/${sessions[i]!.id}`, { accept: 'application/json' });
  await load('GET /checkout/:id (HTML page)', (i) => `/checkout/${sessions[i]!.id}`, { accept: 'text/html' });
  await load('GET /checkout/:id/status', (i) => `/checkout/${sessions[i]!.id}/status`, { accept: 'application/json' });
  await load('GET /checkout/:id/qr.svg (cached)', (i) => `/checkout/${sessions[i]!.id}/qr.svg`, {});
  await pool.close();

  // Live feeds: FEEDS open streams, one per session; one UPDATE moves all sessions, then time
  // until every stream has delivered the change.
  const controllers: AbortController[] = [];
  const arrivals: number[] = [];
  let changedAt = 0;
  let ready = 0;
  const readers = sessions.slice(0, FEEDS).map(async (session) => {
    const controller = new AbortController();
    controllers.push(controller);
    const response = await fetch(`${url}/checkout/${session.id}/events`, { signal: controller.signal });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let counted = false;
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      text += decoder.decode(value, { stream: true });
      if (!counted && text.includes('"view":"awaiting"')) {
        counted = true;
        ready++;
      }
      if (text.includes('"view":"detected"')) {
        arrivals.push(performance.now() - changedAt);
        controller.abort();
        return;
      }
    }
  });
  while (ready < FEEDS) await new Promise((resolve) => setTimeout(resolve, 20));
  // Counted in this process as pool checkouts (one per query or transaction): pg_stat_database
  // would also count the set-up's queries, which idle backends report up to 10 s late.
  let checkouts = 0;
  store.pool.on('acquire', () => checkouts++);
  const idleStarted = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const perSecond = checkouts / ((performance.now() - idleStarted) / 1000);
  changedAt = performance.now();
  await store.query(`UPDATE payment_sessions SET status = 'confirming', amount_received = amount_due, confirmations = 1 WHERE merchant_id = $1`, [merchant.id]);
  await Promise.all(readers);
  arrivals.sort((a, b) => a - b);
  console.log(
    `live feeds: ${FEEDS} open streams cost ${perSecond.toFixed(1)} database round trips/s while idle; a change reached all of them in ${arrivals.at(-1)!.toFixed(0)} ms (p50 ${percentile(arrivals, 50).toFixed(0)} ms, p99 ${percentile(arrivals, 99).toFixed(0)} ms)`,
  );
  for (const controller of controllers) controller.abort();

  await close();
}

await main();
