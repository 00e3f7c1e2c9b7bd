/**
 * The ceiling of webhook delivery on this machine (issue 28 goal 5): the least any durable,
 * signed webhook sender does per delivery, with none of the gateway around it. Each delivery is
 * signed (the gateway's own signer), POSTed with undici over a kept-alive loopback connection to
 * the same receiver process as bench/webhooks.ts, and its answer stored durably: one row in a
 * table with only a primary key, written in group commits (one INSERT per batch of answers, as
 * the gateway's success batch does). No claim, no lease, no outbox, no attempt log beyond that
 * row. Prints Node + Postgres CPU per delivery, to read beside bench/webhooks.ts's.
 *
 *   npx tsx bench/webhookCeiling.ts [--deliveries 5000] [--concurrency 32] [--body-bytes 800]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54365). Linux only for the Postgres CPU (/proc).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { signedHeaders } from '../src/delivery/sign.ts';
import { newId } from '../src/internal/crypto.ts';
import { createDatabaseCpuMeter } from './databaseStats.ts';
import { benchDatabase } from './lib.ts';
import { startReceiver } from './webhookReceiverProcess.ts';

const { values } = parseArgs({
  options: {
    deliveries: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '32' },
    'body-bytes': { type: 'string', default: '800' },
  },
});
const DELIVERIES = Number(values.deliveries);
const CONCURRENCY = Number(values.concurrency);
const body = JSON.stringify({ id: 'evt_x', type: 'payment.confirmed', data: { pad: 'x'.repeat(Math.max(0, Number(values['body-bytes']) - 60)) } });

const database = await benchDatabase('webhook-ceiling', 54365);
const db = new pg.Pool({ connectionString: database.connectionString, max: 4 });
await db.query('CREATE TABLE IF NOT EXISTS ceiling_answers (id text PRIMARY KEY, event_id text NOT NULL, status int NOT NULL, at timestamptz NOT NULL)');
await db.query('TRUNCATE ceiling_answers');
const receiver = await startReceiver();
const target = new URL(receiver.url);
const http = new Pool(target.origin, { connections: CONCURRENCY, keepAliveTimeout: 10_000 });
const meter = await createDatabaseCpuMeter(database.connectionString);

/** Group commit: answers that finish while a write runs go into the next one. */
let queue: { id: string; eventId: string; status: number; at: Date; done: () => void }[] = [];
let writing = false;
async function flush(): Promise<void> {
  if (writing || queue.length === 0) return;
  writing = true;
  const batch = queue.slice(0, 64);
  queue = queue.slice(64);
  await db.query('INSERT INTO ceiling_answers (id, event_id, status, at) SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[])', [
    batch.map((a) => a.id),
    batch.map((a) => a.eventId),
    batch.map((a) => a.status),
    batch.map((a) => a.at),
  ]);
  for (const answer of batch) answer.done();
  writing = false;
  void flush();
}
const record = (answer: { id: string; eventId: string; status: number; at: Date }) =>
  new Promise<void>((done) => {
    queue.push({ ...answer, done });
    void flush();
  });

async function deliver(n: number): Promise<void> {
  const eventId = `evt_${n}`;
  const deliveryId = newId('whd');
  const headers = signedHeaders({ secrets: ['whsec_bench'], body, eventId, eventType: 'payment.confirmed', deliveryId, now: new Date() });
  const response = await http.request({ method: 'POST', path: target.pathname, headers, body });
  await response.body.dump();
  await record({ id: newId('wha'), eventId, status: response.statusCode, at: new Date() });
}

async function run(count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let n = next++; n < count; n = next++) await deliver(n);
    }),
  );
}

await run(Math.min(1_000, DELIVERIES)); // warm-up: JIT, connections, the table's first pages
const cpu = process.cpuUsage();
const dbBefore = meter.snapshot();
const started = performance.now();
await run(DELIVERIES);
const seconds = (performance.now() - started) / 1000;
const node = process.cpuUsage(cpu);
const dbMicros = meter.since(dbBefore);
const nodeUs = (node.user + node.system) / DELIVERIES;
const dbUs = dbMicros === undefined ? undefined : dbMicros / DELIVERIES;
console.log(
  JSON.stringify(
    {
      deliveries: DELIVERIES,
      concurrency: CONCURRENCY,
      bodyBytes: body.length,
      deliveriesPerSecond: Math.round(DELIVERIES / seconds),
      nodeCpuUsPerDelivery: Math.round(nodeUs),
      // The kernel's part of it (system time): socket writes and reads, wake-ups.
      nodeSystemCpuUsPerDelivery: Math.round(node.system / DELIVERIES),
      databaseCpuUsPerDelivery: dbUs === undefined ? null : Math.round(dbUs),
      totalCpuUsPerDelivery: dbUs === undefined ? null : Math.round(nodeUs + dbUs),
    },
    null,
    2,
  ),
);
await http.close();
await receiver.close();
await db.end();
await database.close();
