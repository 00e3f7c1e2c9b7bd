/**
 * The hot paths on an empty database and on one with a realistic history, in one run.
 *
 *   npx tsx bench/scale.ts [--scale 1] [--requests 200] [--explain]
 *
 * Starts an embedded Postgres in a temporary folder (its own data directory, removed at the end)
 * unless DATABASE_URL is set, the real API in this process and the engine, then:
 * 1. on the empty database (one merchant, one wallet, a few sessions): reads a session, the first
 *    page of `GET /payments` without and with filters, the first page of `GET /events`, creates
 *    sessions, times the engine's idle pass and one reconcile that matches a payment;
 * 2. fills the database with `--scale` × (1M sessions, 10M transfers, 3M events and deliveries,
 *    5M webhook attempts) by `generate_series`, cloned from the rows step 1 made (so every row is
 *    one the code wrote), the measured merchant owning a fifth of them; the secondary indexes are
 *    dropped during the fill and rebuilt after it, then VACUUM ANALYZE;
 * 3. measures step 1 again and prints each figure beside its empty-database one;
 * 4. runs the retention pass (src/store/retention.ts) on the history (two thirds of the attempts
 *    are older than its 30 days) and once more when there is nothing left to delete.
 * The process's RSS (API, engine and load generator together: an upper bound of the daemon's) is
 * sampled throughout. `--explain` prints `EXPLAIN (ANALYZE, BUFFERS)` of every hot statement on
 * the filled database. Latencies are medians (and p90) of sequential requests on one keep-alive
 * connection: the cost of one request, not throughput.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Pool as UndiciPool } from 'undici';
import { addWallet, createApiKey, createMerchant } from '../src/accounts/index.ts';
import { createEngine } from '../src/engine/index.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { pruneExpiredRows } from '../src/store/retention.ts';
import { benchDatabase, listenBenchApi, percentile } from './lib.ts';
import { createStatementRecorder, explainStatements, formatExecutionTimes, formatStatements } from './scaleExplain.ts';
import { fillHistory } from './scaleFill.ts';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    requests: { type: 'string', default: '200' },
    explain: { type: 'boolean', default: false },
  },
});
const SCALE = Number(values.scale);
const REQUESTS = Number(values.requests);
const WALLET = '0x00000000000000000000000000000000000a11ce';
const USDC = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';

let peakRss = 0;
const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage().rss));
const rssTimer = setInterval(sampleRss, 100);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** One measure: its label and its median and p90 in ms. */
interface Figure {
  label: string;
  p50: number;
  p90: number;
}

async function main() {
  console.log(`scale bench: npx tsx bench/scale.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  console.log(
    `node ${process.version}, ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')}`,
  );
  const database = await benchDatabase('scale', 54381);
  await migrate({ connectionString: database.connectionString });
  const raw = createStore({ connectionString: database.connectionString, max: 10 });
  const recorder = createStatementRecorder();
  /** What the API, the engine and the retention pass use: every statement they send can be recorded. */
  const store = recorder.wrap(raw);
  const box = createSecretBox(randomBytes(32));
  const { merchant } = await createMerchant(store, box, { name: 'Bench Shop' });
  const key = (await createApiKey(store, { merchantId: merchant.id, livemode: true })).secret;
  await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
  await store.query(`INSERT INTO chain_heads (livemode, chain, head_block, processed_block, finalized_block) VALUES (true, 'polygon', 100, 100, 100)`);
  // Live payments need the chain configured; nothing is sent to this URL (no ingester runs here).
  const served = await listenBenchApi({ store, box, env: { SVC_POLYGON_RPC_URL: 'http://127.0.0.1:9' } });
  const http = new UndiciPool(served.url, { connections: 1, pipelining: 1 });
  const engine = createEngine({ store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
  let block = 100;
  try {
    const request = async (method: 'GET' | 'POST', path: string, body?: unknown, expected = 200) => {
      const response = await http.request({
        method,
        path,
        headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.body.text();
      if (response.statusCode !== expected) throw new Error(`${method} ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    let created = 0;
    const createPayment = () =>
      request('POST', '/api/v1/payments', { amount: `${10 + (created++ % 500)}.25`, currency: 'USDC', chain: 'polygon', merchantWallet: WALLET }, 201);

    /** Pays one open session on chain (a transfer of its due amount in a new block), then one reconcile matches it. */
    async function payOne(): Promise<number> {
      const payment = await createPayment();
      const { rows } = await raw.query<{ pay_to: string; amount_due: string }>('SELECT pay_to, amount_due::text FROM payment_sessions WHERE id = $1', [
        payment.id,
      ]);
      block += 1;
      await raw.query(
        `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, from_address, to_address, amount)
         VALUES (true, 'polygon', $1, 0, $2, $3, now(), $4, $5, $6, $7)`,
        [
          `0x${randomBytes(32).toString('hex')}`,
          block,
          `0x${randomBytes(32).toString('hex')}`,
          USDC,
          `0x${'be'.repeat(20)}`,
          rows[0]!.pay_to,
          rows[0]!.amount_due,
        ],
      );
      await raw.query(`UPDATE chain_heads SET head_block = $1, processed_block = $1 WHERE livemode AND chain = 'polygon'`, [block]);
      const started = performance.now();
      const result = await engine.reconcile({ chain: 'polygon', livemode: true });
      const ms = performance.now() - started;
      if (result.matched !== 1) throw new Error(`one reconcile matched ${result.matched} transfers, not 1`);
      return ms;
    }

    async function measure(): Promise<Figure[]> {
      const figures: Figure[] = [];
      const time = async (label: string, count: number, work: (i: number) => Promise<unknown>) => {
        for (let i = 0; i < Math.min(5, count); i++) await work(i); // warm-up
        const ms: number[] = [];
        for (let i = 0; i < count; i++) {
          const started = performance.now();
          await work(i);
          ms.push(performance.now() - started);
          sampleRss();
        }
        ms.sort((a, b) => a - b);
        figures.push({ label, p50: percentile(ms, 50), p90: percentile(ms, 90) });
      };
      const { rows } = await raw.query<{ id: string }>('SELECT id FROM payment_sessions WHERE merchant_id = $1 ORDER BY created_at DESC LIMIT 50', [
        merchant.id,
      ]);
      const ids = rows.map((row) => row.id);
      await time('GET /sessions/{id}', REQUESTS, (i) => request('GET', `/api/v1/sessions/${ids[i % ids.length]}`));
      await time('GET /payments (first page of 20)', REQUESTS, () => request('GET', '/api/v1/payments'));
      await time('GET /payments?status=confirming', REQUESTS, () => request('GET', '/api/v1/payments?status=confirming'));
      await time('GET /payments?status=settled', REQUESTS, () => request('GET', '/api/v1/payments?status=settled'));
      await time('GET /payments?chain=polygon&currency=USDC', REQUESTS, () => request('GET', '/api/v1/payments?chain=polygon&currency=USDC'));
      const dayAgo = new Date(Date.now() - 86_400_000).toISOString();
      await time('GET /payments?createdGte=<a day ago>', REQUESTS, () => request('GET', `/api/v1/payments?createdGte=${encodeURIComponent(dayAgo)}`));
      await time('GET /events (first page of 20)', REQUESTS, () => request('GET', '/api/v1/events'));
      await time('GET /events?type=payment.confirming', REQUESTS, () => request('GET', '/api/v1/events?type=payment.confirming'));
      await time('POST /payments', Math.min(REQUESTS, 100), () => createPayment());
      await time('engine idle pass (reconcile, nothing new)', 20, () => engine.reconcile({ chain: 'polygon', livemode: true }));
      const reconciles: number[] = [];
      for (let i = 0; i < 10; i++) reconciles.push(await payOne());
      reconciles.sort((a, b) => a - b);
      figures.push({ label: 'one reconcile matching one payment', p50: percentile(reconciles, 50), p90: percentile(reconciles, 90) });
      return figures;
    }

    for (let i = 0; i < 20; i++) await createPayment();
    await payOne(); // one real paid session and its events: the templates of the fill
    recorder.start();
    const empty = await measure();
    const emptyStatements = recorder.stop();
    // Server-side time of each statement (EXPLAIN ANALYZE, values as sent), compared after the fill.
    const emptyExecution = await explainStatements(raw, emptyStatements);
    const rssEmpty = process.memoryUsage().rss;

    const fillStarted = performance.now();
    const counts = await fillHistory(raw, { scale: SCALE, merchantId: merchant.id, wallet: WALLET, log: (line) => console.log(`  ${line}`) });
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    console.log(
      `filled in ${fillSeconds.toFixed(0)} s: ${Object.entries(counts)
        .map(([table, n]) => `${table} ${n.toLocaleString('en')}`)
        .join(', ')}`,
    );
    for (let i = 0; i < 20; i++) await createPayment();
    recorder.start();
    const full = await measure();
    const hot = recorder.stop();

    console.log(`\n${'measure'.padEnd(46)} ${'empty p50 / p90'.padStart(18)} ${'filled p50 / p90'.padStart(18)}  ratio of p50`);
    for (const [index, before] of empty.entries()) {
      const after = full[index]!;
      const cell = (f: Figure) => `${f.p50.toFixed(1)} / ${f.p90.toFixed(1)} ms`.padStart(18);
      const ratio = after.p50 / before.p50;
      console.log(`${before.label.padEnd(46)} ${cell(before)} ${cell(after)}  ${ratio.toFixed(2)}×${ratio > 2 ? '  NOT FLAT' : ''}`);
    }

    const retention = async (label: string) => {
      const started = performance.now();
      const deleted = await pruneExpiredRows(store);
      console.log(`retention pass, ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s, deleted ${JSON.stringify(deleted)}`);
    };
    await retention('history of 90 days');
    recorder.start();
    await retention('nothing left to delete');
    const retentionStatements = recorder.stop();
    sampleRss();
    console.log('\nCostliest statements on the filled database (time per call, calls during the measures above):');
    for (const line of formatStatements([...hot, ...retentionStatements], 20)) console.log(`  ${line}`);
    console.log(`\nRSS of this process (API + engine + load generator): empty ${mb(rssEmpty)}, peak throughout ${mb(peakRss)}`);
    const fullExecution = await explainStatements(raw, hot);
    console.log('\nServer time of each statement the measures sent (EXPLAIN ANALYZE, values as sent), empty and filled:');
    for (const line of formatExecutionTimes(emptyExecution, fullExecution, hot)) console.log(`  ${line}`);
    if (values.explain) {
      console.log('\nEXPLAIN (ANALYZE, BUFFERS) of every statement the measures sent, with the values it was sent with:');
      await explainStatements(raw, [...hot, ...retentionStatements], (line) => console.log(line));
    }
  } finally {
    clearInterval(rssTimer);
    await http.close();
    await served.app.close();
    await raw.close();
    await database.close();
  }
}

await main();
