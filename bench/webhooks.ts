/**
 * Webhook delivery benchmark: deliveries per second to a local receiver, and the delay from a
 * state change's commit to its delivery (median, p99).
 *
 *   npx tsx bench/webhooks.ts [--events 5000] [--warmup 1000] [--latency-events 300] [--rate 20] [--concurrency 32]
 *                             [--statements] [--waits] [--cpu-profile FILE]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54364). The receiver is node:http on loopback answering 200 at once, in a
 * process of its own (bench/webhookReceiver.mjs), so
 * the numbers are the gateway's cost, not a receiver's. `--statements` prints the throughput
 * run's costliest statements per delivery (pg_stat_statements), `--waits` the backends' wait
 * events during it,
 * `--cpu-profile` writes a V8 CPU profile of this process during it (bench/profileSummary.ts).
 *
 * Before the measured run, a first worker delivers `--warmup` events and stops (0: none), as
 * bench/webhookCeiling.ts warms up before it measures: a daemon delivers for days, and without it
 * the figure carried the first second of a process (undici's import, V8 compiling the hot path,
 * each connection's first statements planned), about a fifth of a 5,000-delivery run's CPU.
 *
 * BENCH_SETUP_SQL, when set, is run once after the migrations: a trial of a schema change before
 * writing its migration, e.g. `DROP INDEX webhook_deliveries_due` (docs/benchmarks.md, session 13).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createMerchant } from '../src/accounts/index.ts';
import { createDelivery, createEndpoint } from '../src/delivery/index.ts';
import { appendEvent } from '../src/payments/outbox.ts';
import { createSecretBox, newId } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createStore, type Store } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase, percentile } from './lib.ts';
import { startReceiver } from './webhookReceiverProcess.ts';
import { createDatabaseCpuMeter, createStatementStats, formatWaits, sampleWaitEvents } from './databaseStats.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '5000' },
    warmup: { type: 'string', default: '1000' },
    'latency-events': { type: 'string', default: '300' },
    rate: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '32' },
    statements: { type: 'boolean', default: false },
    waits: { type: 'boolean', default: false },
    'cpu-profile': { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const WARMUP = Number(values.warmup);
const LATENCY_EVENTS = Number(values['latency-events']);
const RATE = Number(values.rate);
const CONCURRENCY = Number(values.concurrency);

const logger = createLogger({ level: 'warn' });
const box = createSecretBox(randomBytes(32));

async function session(store: Store, merchantId: string): Promise<string> {
  const id = newId('ses');
  await store.query(
    `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
                                   required_confirmations, expires_at, monitor_until)
     VALUES ($1, $2, false, 'polygon', 'USDC', 6, 25000000, 25000000, 250000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'],
             '0x000000000000000000000000000000000000dEaD', 12, now() + interval '1 hour', now() + interval '1 day')`,
    [id, merchantId],
  );
  return id;
}

/** A state change and its event in one transaction, as the engine commits them. */
async function confirm(store: Store, merchantId: string, sessionId: string): Promise<string> {
  return store.transaction(async (sql) => {
    await sql.query(`UPDATE payment_sessions SET status = 'confirmed', confirmed_at = now(), updated_at = now() WHERE id = $1`, [sessionId]);
    const envelope = await appendEvent(sql, {
      merchantId,
      livemode: false,
      type: 'payment.confirmed',
      sessionId,
      data: {
        id: sessionId,
        amount: '25.00',
        currency: 'USDC',
        chain: 'polygon',
        status: 'confirmed',
        txHash: `0x${'ab'.repeat(32)}`,
        confirmedAt: new Date().toISOString(),
      },
    });
    return envelope.id;
  });
}

/** `count` outbox events, committed 500 to a transaction. */
async function backlog(store: Store, merchantId: string, sessions: string[], count: number): Promise<void> {
  for (let done = 0; done < count; ) {
    const batch = Math.min(500, count - done);
    await store.transaction(async (sql) => {
      for (let i = 0; i < batch; i++) {
        await appendEvent(sql, {
          merchantId,
          livemode: false,
          type: 'payment.confirmed',
          sessionId: sessions[i % sessions.length]!,
          data: { id: sessions[i % sessions.length]!, n: done + i },
        });
      }
    });
    done += batch;
  }
}

async function main() {
  const database = await benchDatabase('webhooks', 54364, { statements: values.statements });
  const { connectionString } = database;
  await migrate({ connectionString });
  const store = createStore({ connectionString });
  // A trial's change to the schema or settings, after the migrations (see the header).
  if (process.env.BENCH_SETUP_SQL) await store.query(process.env.BENCH_SETUP_SQL);
  const statements = values.statements ? await createStatementStats(connectionString) : undefined;
  const databaseCpu = await createDatabaseCpuMeter(connectionString);
  const receiver = await startReceiver();
  try {
    const { merchant } = await createMerchant(store, box, { name: `bench ${Date.now()}` });
    await createEndpoint(store, box, { merchantId: merchant.id, livemode: false, url: receiver.url });
    const sessions = await Promise.all(Array.from({ length: 50 }, () => session(store, merchant.id)));

    const newDelivery = () =>
      createDelivery({
        store,
        logger,
        metrics: createMetricsRegistry({ defaultMetrics: false }),
        config: { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true },
        box,
        concurrency: CONCURRENCY,
      });
    if (WARMUP > 0) {
      await backlog(store, merchant.id, sessions, WARMUP);
      const warm = newDelivery();
      await warm.start();
      await receiver.until(WARMUP);
      await warm.stop();
      await receiver.clear();
    }

    // 1. Throughput: a backlog of events, then the worker drains it.
    await backlog(store, merchant.id, sessions, EVENTS);
    const delivery = newDelivery();
    await statements?.reset();
    const receiverCpu0 = (await receiver.arrivals()).cpuMicros;
    const profiler = values['cpu-profile'] ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const databaseCpu0 = databaseCpu.snapshot();
    await delivery.start();
    const drained = values.waits ? sampleWaitEvents(connectionString, receiver.until(EVENTS)) : receiver.until(EVENTS).then(() => undefined);
    const waits = (await drained)?.waits;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const databaseMicros = databaseCpu.since(databaseCpu0);
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop');
      fs.writeFileSync(values['cpu-profile']!, JSON.stringify(profile));
      profiler.disconnect();
    }
    const throughput = EVENTS / seconds;
    if (waits) console.log(`wait events during the throughput run: ${formatWaits(waits)}`);
    if (statements)
      for (const line of await statements.top(EVENTS, 10)) console.log(`  ${line.replace('µs/req', 'µs/delivery').replace('calls/req', 'calls/delivery')}`);

    // 2. Latency: an idle worker, state changes committed one at a time at RATE per second.
    const receiverCpu1 = (await receiver.arrivals()).cpuMicros;
    const receiverCpu = { user: receiverCpu1.user - receiverCpu0.user, system: receiverCpu1.system - receiverCpu0.system };
    await receiver.clear();
    const committed = new Map<string, number>();
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      const id = await confirm(store, merchant.id, sessions[i % sessions.length]!);
      committed.set(id, performance.timeOrigin + performance.now());
      await new Promise((resolve) => setTimeout(resolve, 1000 / RATE));
    }
    await receiver.until(LATENCY_EVENTS);
    await delivery.stop();
    const { arrivals } = await receiver.arrivals();
    const delays = [...committed].map(([id, at]) => arrivals.get(id)! - at).sort((a, b) => a - b);

    const result = {
      throughput: {
        events: EVENTS,
        seconds: Number(seconds.toFixed(2)),
        deliveriesPerSecond: Math.round(throughput),
        concurrency: CONCURRENCY,
        // This process's CPU (the delivery worker; the receiver runs in a child process): one core
        // is all a Node worker gets.
        nodeCpuMsPerDelivery: Number(((cpu.user + cpu.system) / 1000 / EVENTS).toFixed(3)),
        nodeCpuShare: Number(((cpu.user + cpu.system) / 1e6 / seconds).toFixed(2)),
        // The kernel's part of it (system time): socket writes and reads, wake-ups of the receiver and Postgres.
        nodeSystemCpuMsPerDelivery: Number((cpu.system / 1000 / EVENTS).toFixed(3)),
        // The receiver's CPU during the throughput run (not the warm-up's), not the gateway's.
        receiverCpuMsPerDelivery: Number(((receiverCpu.user + receiverCpu.system) / 1000 / EVENTS).toFixed(3)),
        // Postgres's CPU (every process of the cluster), when it runs on this host.
        databaseCpuMsPerDelivery: databaseMicros === undefined ? undefined : Number((databaseMicros / 1000 / EVENTS).toFixed(3)),
      },
      commitToDeliveryMs: {
        events: LATENCY_EVENTS,
        ratePerSecond: RATE,
        median: Number(percentile(delays, 50).toFixed(1)),
        p99: Number(percentile(delays, 99).toFixed(1)),
        max: Number(delays[delays.length - 1]!.toFixed(1)),
      },
      host: { cpus: os.cpus().length, node: process.version },
    };
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await receiver.close();
    await statements?.close();
    await store.close();
    await database.close();
  }
}

await main();
