/**
 * Merchant API benchmark, side by side with a ceiling server in the same run:
 *
 * - reads: `GET /sessions/{id}` and `GET /payments/{id}` against `ceiling` (node:http + a pg
 *   Pool of the same size + one primary-key SELECT on payment_sessions returned as JSON), same
 *   database, same load generator, same connections, alternating rounds; the ratio to the
 *   ceiling of the same round is the figure that counts on a shared, noisy machine;
 * - latency at a steady rate (open loop, latency from each request's scheduled time);
 * - creation: `POST /payments` spread over 64 live wallets, and on one wallet (500 prices, and
 *   one price: every request takes the same due-amount lock and gets a unique due amount),
 *   beside the ceiling's `POST /c` (one INSERT committed durably: this database's commit rate).
 *
 * Both servers run in their own processes (bench/apiServer.ts), the generator in this one.
 * The API counts rate limits as in production, with limits out of reach.
 *
 *   npx tsx bench/api.ts [--seconds 5] [--connections 50] [--rate 1000] [--rounds 2] [--only reads|create] [--profile] [--waits] [--statements] [--pool 10]
 *
 * Each line gives the rate, p50 and p99 latency, and the CPU time per request of the server
 * process and of Postgres (all its processes, from /proc). `--pool` sets both servers' database
 * pool size (default 10, the daemon's). `--waits` samples the database backends' wait events
 * during each run (commit flushes, locks, CPU); `--statements` loads pg_stat_statements and
 * prints each run's costliest statements per request; `--profile` starts both servers with
 * `--cpu-prof` (the folder is printed; read a profile with `npx tsx bench/profileSummary.ts
 * <file>`). Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder
 * (port BENCH_PG_PORT, default 54367).
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts';
import { addWallet, createApiKey, createMerchant } from '../src/accounts/index.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase, closedLoop, formatResult, openLoop, type LoadRequest, type LoadResult } from './lib.ts';
import { createDatabaseCpuMeter, createStatementStats, formatWaits, sampleWaitEvents, type DatabaseCpuMeter, type StatementStats } from './databaseStats.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    rate: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '2' },
    only: { type: 'string' },
    waits: { type: 'boolean', default: false },
    pool: { type: 'string', default: '10' },
    statements: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const RATE = Number(values.rate);
const ROUNDS = Number(values.rounds);
const WALLETS = Array.from({ length: 64 }, () => privateKeyToAddress(generatePrivateKey()));
const ONE_WALLET = privateKeyToAddress(generatePrivateKey());
const ONE_PRICE_WALLET = privateKeyToAddress(generatePrivateKey());
const PROFILE_DIR = path.join(os.tmpdir(), `svc-bench-api-profile-${process.pid}`);

/** A server process of the bench (bench/apiServer.ts). */
interface Server {
  url: string;
  /** This server's CPU time so far (user + system), in microseconds. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts bench/apiServer.ts as `kind`, once it listens. */
async function startServer(kind: 'api' | 'ceiling', env: Record<string, string>): Promise<Server> {
  const profile = values.profile ? ['--cpu-prof', '--cpu-prof-dir', path.join(PROFILE_DIR, kind)] : [];
  const child: ChildProcess = fork(path.join(import.meta.dirname, 'apiServer.ts'), [kind], {
    execArgv: ['--import', 'tsx', ...profile],
    env: { ...process.env, ...env },
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return {
    url,
    cpu: () =>
      new Promise<number>((resolve) => {
        const onMessage = (message: unknown) => {
          const usage = (message as { cpu?: NodeJS.CpuUsage }).cpu;
          if (!usage) return;
          child.off('message', onMessage);
          resolve(usage.user + usage.system);
        };
        child.on('message', onMessage);
        child.send('cpu');
      }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      await exited;
    },
  };
}

async function main() {
  const database = await benchDatabase('api', 54367, { statements: values.statements });
  await migrate({ connectionString: database.connectionString });
  const store = createStore({ connectionString: database.connectionString, max: 2 });
  const boxKey = randomBytes(32);
  const { merchant } = await createMerchant(store, createSecretBox(boxKey), { name: 'Bench Shop' });
  const testKey = (await createApiKey(store, { merchantId: merchant.id, livemode: false })).secret;
  const liveKey = (await createApiKey(store, { merchantId: merchant.id, livemode: true })).secret;
  for (const address of [...WALLETS, ONE_WALLET, ONE_PRICE_WALLET]) {
    await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address, verifiedBy: 'operator' });
  }
  await store.query('CREATE TABLE IF NOT EXISTS bench_ceiling_commits (id bigserial PRIMARY KEY, body text NOT NULL)');
  const env = { DATABASE_URL: database.connectionString, BENCH_BOX_KEY: boxKey.toString('hex'), BENCH_POOL_SIZE: values.pool };
  const servers = await Promise.allSettled([startServer('api', env), startServer('ceiling', env)]);
  try {
    const [api, ceiling] = servers.map((started) => {
      if (started.status === 'rejected') throw started.reason;
      return started.value;
    }) as [Server, Server];
    await measure(api, ceiling);
  } finally {
    await Promise.all(servers.map((started) => (started.status === 'fulfilled' ? started.value.stop() : undefined)));
    if (values.profile) console.log(`\nCPU profiles of the servers: ${PROFILE_DIR}/{api,ceiling}`);
    await store.close();
    await database.close();
  }

  async function measure(api: Server, ceiling: Server): Promise<void> {
    const databaseCpu = await createDatabaseCpuMeter(database.connectionString);
    const statements = values.statements ? await createStatementStats(database.connectionString) : undefined;
    try {
      await runs(api, ceiling, databaseCpu, statements);
    } finally {
      await statements?.close();
    }
  }

  async function runs(api: Server, ceiling: Server, databaseCpu: DatabaseCpuMeter, statements: StatementStats | undefined): Promise<void> {
    console.log(`api bench: npx tsx bench/api.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
    console.log(
      `${SECONDS} s per run, ${CONNECTIONS} connections, database pool ${values.pool}, node ${process.version}, ${os.cpus().length} CPUs, load average ${os
        .loadavg()
        .map((n) => n.toFixed(1))
        .join(' ')}`,
    );
    const keyed = (key: string, spec: LoadRequest): LoadRequest => ({ ...spec, headers: { 'x-api-key': key, ...spec.headers } });
    // Each run also reports the CPU time per answer of the server process and of Postgres (all its
    // processes): the costs of a request that the load of other processes disturbs least.
    // With --waits, what the database's backends did meanwhile (sampled wait events) follows each line.
    const run = async (
      server: Server,
      label: string,
      request: (i: number) => LoadRequest,
      options: { expected?: number; keepBodies?: number; extra?: (result: LoadResult) => string } = {},
    ) => {
      const before = await server.cpu();
      const databaseBefore = databaseCpu.snapshot();
      await statements?.reset();
      const loop = closedLoop({
        origin: server.url,
        label,
        connections: CONNECTIONS,
        seconds: SECONDS,
        expected: options.expected ?? 200,
        request,
        keepBodies: options.keepBodies ?? 0,
      });
      const { result, waits } = values.waits ? await sampleWaitEvents(database.connectionString, loop) : { result: await loop, waits: undefined };
      const perRequest = (micros: number) => (micros / Math.max(1, result.requests)).toFixed(0).padStart(4);
      const serverCpu = perRequest((await server.cpu()) - before);
      const databaseMicros = databaseCpu.since(databaseBefore);
      const databaseCpuText = databaseMicros === undefined ? ' n/a' : perRequest(databaseMicros);
      console.log(formatResult(result, `   CPU µs/req: server ${serverCpu}, Postgres ${databaseCpuText}${options.extra?.(result) ?? ''}`));
      if (waits) console.log(`    database backends: ${formatWaits(waits, 6)}`);
      if (statements) for (const line of await statements.top(result.requests)) console.log(`    ${line}`);
      return result;
    };
    const ratioTo = (top: LoadResult) => (result: LoadResult) => `   = ${((100 * result.perSecond) / top.perSecond).toFixed(0)} % of the ceiling`;
    const payment = (i: number, wallet: string, amount = `${10 + (i % 500)}.25`) => ({ amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet });
    const readCeiling = (i: number): LoadRequest => ({ method: 'GET', path: `/s/${id(i)}` });
    const readSession = (i: number) => keyed(testKey, { method: 'GET', path: `/api/v1/sessions/${id(i)}` });
    const readPayment = (i: number) => keyed(testKey, { method: 'GET', path: `/api/v1/payments/${id(i)}` });

    // Sessions to read (sandbox, so the test key reads them); also the API's warm-up.
    const seeded = await run(
      api,
      'warm-up: POST /payments, test key (not a result)',
      (i) => keyed(testKey, { method: 'POST', path: '/api/v1/payments', body: payment(i, ONE_WALLET) }),
      {
        expected: 201,
        keepBodies: 2000,
      },
    );
    const ids = seeded.bodies.map((body) => (JSON.parse(body) as { id: string }).id);
    function id(i: number): string {
      return ids[(i * 7919) % ids.length]!;
    }

    if (values.only !== 'create') {
      console.log('\nreads (closed loop; ratio to the ceiling of the same round)');
      await run(ceiling, 'warm-up: ceiling (not a result)', readCeiling);
      await run(api, 'warm-up: GET /api/v1/sessions/{id} (not a result)', readSession);
      for (let round = 1; round <= ROUNDS; round++) {
        const top = await run(ceiling, `round ${round}: ceiling (node:http + pg, one SELECT)`, readCeiling);
        const extra = ratioTo(top);
        await run(api, `round ${round}: GET /api/v1/sessions/{id}`, readSession, { extra });
        await run(api, `round ${round}: GET /api/v1/payments/{id}`, readPayment, { extra });
      }

      console.log(`\nlatency at a steady ${RATE} req/s (open loop, from each request's scheduled time)`);
      const steady = async (origin: string, label: string, request: (i: number) => LoadRequest) =>
        console.log(formatResult(await openLoop({ origin, label, rate: RATE, seconds: SECONDS, connections: CONNECTIONS, expected: 200, request })));
      await steady(ceiling.url, 'ceiling', readCeiling);
      await steady(api.url, 'GET /api/v1/sessions/{id}', readSession);
      await steady(api.url, 'GET /api/v1/payments/{id}', readPayment);
    }

    if (values.only !== 'reads') {
      console.log('\ncreation (closed loop, live key; ratio to the ceiling: one INSERT per request, committed durably)');
      const top = await run(ceiling, 'ceiling (node:http + pg, one INSERT)', (i) => ({ method: 'POST', path: '/c', body: payment(i, WALLETS[i % 64]!) }), {
        expected: 201,
      });
      const extra = ratioTo(top);
      // What the round trips of a creation's transaction (about ten) cost by themselves at this pool size.
      for (const roundTrips of [5, 10]) {
        await run(
          ceiling,
          `ceiling, INSERT in a transaction of ${roundTrips} statements`,
          (i) => ({ method: 'POST', path: '/c', body: payment(i, WALLETS[i % 64]!), headers: { 'x-round-trips': String(roundTrips) } }),
          {
            expected: 201,
            extra,
          },
        );
      }
      const create = (label: string, body: (i: number) => unknown, headers?: (i: number) => Record<string, string>) =>
        run(api, label, (i) => keyed(liveKey, { method: 'POST', path: '/api/v1/payments', body: body(i), ...(headers ? { headers: headers(i) } : {}) }), {
          expected: 201,
          extra,
        });
      await create('POST /payments, 64 wallets', (i) => payment(i, WALLETS[i % 64]!));
      await create('POST /payments, one wallet, 500 prices', (i) => payment(i, ONE_WALLET));
      await create('POST /payments, one wallet, one price', (i) => payment(i, ONE_PRICE_WALLET, '25.00'));
      const tag = randomBytes(4).toString('hex');
      await create(
        'POST /payments, 64 wallets, Idempotency-Key',
        (i) => payment(i, WALLETS[i % 64]!),
        (i) => ({ 'idempotency-key': `${tag}-${i}` }),
      );
    }
  }
}

await main();
