/**
 * svc gateway against Ponder 1.x, as a user would compare them (issue 28 goal 3): the same anvil
 * chain (polygon's id and USDC address), the same transfers into the same watched wallets, each
 * tool started as its own command on a fresh database and timed from process start to its last
 * transfer stored, start-up included:
 * - svc: `svc start` (every role) on a database migrated, with a merchant and the wallets added
 *   beforehand (what `svc wallets add` leaves); done when `transfers` holds every transfer;
 * - Ponder: `ponder start` in bench/ponder/ (its own package.json, installed there by this script
 *   with `npm install` on first use, never by the project's install), indexing the token's
 *   Transfer events filtered to the wallets into a table; done when the table holds every one.
 * Modes: `direct` (both on anvil) and `proxy` (both behind bench/rpcProxy.ts: 50-150 ms per
 * request, eth_getLogs capped at 10,000 blocks and 10 MB, 429 + Retry-After above
 * `--rate` requests/s, 1 % 5xx). A tool that stores fewer or more rows than were minted fails the run.
 * Each result gives the wall time, the first stored transfer, transfers/s and the CPU of the
 * tool's process and of Postgres: the machine is shared, so the ratio of one run is the figure.
 *
 * `--against DIR` adds the tool `svc-against`: another checkout's built svc (say the commit before a
 * change), run the same way on the same chain.
 *
 * `BENCH_SVC_LOG=file` appends each svc run's log to `file.<tool>` (at `BENCH_SVC_LOG_LEVEL`, default
 * warn); `BENCH_PROXY_TRACE=file` has the proxy write one line per request. Note that `svc start`
 * runs from source (tsx: seconds more CPU and start-up) when dist/ is older than src/: rebuild first.
 *
 *   npx tsx bench/ponder.ts [--transfers 100000] [--per-block 200] [--wallets 100] [--modes direct,proxy] [--rate 25] [--tools svc,ponder] [--against DIR]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getAddress, numberToHex, pad, type Address } from 'viem';
import { startAnvil } from '../test/helpers/anvil.ts';
import { mintMany } from '../test/helpers/batchMinter.ts';
import { loadChains } from '../src/internal/chains.ts';
import { migrate } from '../src/store/migrate.ts';
import { createStore } from '../src/store/index.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { addWallet, createMerchant } from '../src/accounts/index.ts';
import { benchDatabase } from './lib.ts';
import { createDatabaseCpuMeter } from './databaseStats.ts';
import { startProviderProxy, type ProviderProxyStats } from './rpcProxy.ts';

const { values } = parseArgs({
  options: {
    transfers: { type: 'string', default: '100000' },
    'per-block': { type: 'string', default: '200' },
    wallets: { type: 'string', default: '100' },
    modes: { type: 'string', default: 'direct,proxy' },
    tools: { type: 'string', default: 'svc,ponder' },
    rate: { type: 'string', default: '25' },
    'timeout-minutes': { type: 'string', default: '30' },
    against: { type: 'string' },
  },
});
const TRANSFERS = Number(values.transfers);
const PER_BLOCK = Number(values['per-block']);
const WALLETS = Number(values.wallets);
const root = new URL('..', import.meta.url).pathname;
const ponderDir = path.join(root, 'bench/ponder');
const log = (text: string) => process.stderr.write(`${text}\n`);

// Ponder is installed in its own folder, only when this bench runs.
if (values.tools.includes('ponder') && !fs.existsSync(path.join(ponderDir, 'node_modules/ponder/package.json'))) {
  log('installing Ponder in bench/ponder (npm install) …');
  execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: ponderDir, stdio: 'inherit' });
}

const database = await benchDatabase('ponder', 54471);
const admin = new pg.Client({ connectionString: database.connectionString });
await admin.connect();
const databaseCpu = await createDatabaseCpuMeter(database.connectionString);
const anvil = await startAnvil({ chain: 'polygon' });
const chain = loadChains().polygon;
const usdc = chain.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const wallets = Array.from({ length: WALLETS }, (_, i) => getAddress(pad(numberToHex(0x1000 + i), { size: 20 })));

/** CPU seconds (user + system) of a process, from /proc; NaN once it has gone. */
function cpuSeconds(child: ChildProcess): number {
  try {
    const fields = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return NaN;
  }
}

/** A fresh database on the bench cluster. */
async function freshDatabase(name: string): Promise<string> {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(database.connectionString);
  url.pathname = `/${name}`;
  return url.toString();
}

interface Run {
  tool: string;
  mode: string;
  seconds: number;
  first_transfer_seconds: number;
  transfers_per_second: number;
  stored: number;
  tool_cpu_seconds: number;
  postgres_cpu_seconds: number | undefined;
  proxy?: ProviderProxyStats;
}

/** Starts a tool, polls `count` until every transfer is stored, stops it. */
async function timed(tool: string, mode: string, child: ChildProcess, count: () => Promise<number>): Promise<Omit<Run, 'proxy'>> {
  const started = performance.now();
  const databaseBefore = databaseCpu.snapshot();
  let output = '';
  child.stdout?.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  child.stderr?.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  if (process.env.BENCH_SVC_LOG) child.stdout?.on('data', (chunk) => fs.appendFileSync(`${process.env.BENCH_SVC_LOG}.${tool}`, chunk));
  let exited = false;
  child.once('exit', () => (exited = true));
  let first: number | undefined;
  let stored = 0;
  let cpu = 0;
  const deadline = started + Number(values['timeout-minutes']) * 60_000;
  while (stored < TRANSFERS) {
    if (exited) throw new Error(`${tool} exited before storing every transfer (${stored}):\n${output}`);
    if (performance.now() > deadline) throw new Error(`${tool} stored ${stored} of ${TRANSFERS} in time:\n${output}`);
    stored = await count().catch(() => 0);
    if (stored > 0) first ??= performance.now() - started;
    cpu = cpuSeconds(child) || cpu;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = (performance.now() - started) / 1000;
  const postgres = databaseCpu.since(databaseBefore);
  // A few seconds more: nothing arrives twice (both key rows by transaction and log index).
  await new Promise((resolve) => setTimeout(resolve, 2000));
  stored = await count();
  child.kill('SIGTERM');
  if (!exited) await new Promise((resolve) => child.once('exit', resolve));
  if (stored !== TRANSFERS) throw new Error(`${tool} stored ${stored} transfers, ${TRANSFERS} were minted`);
  return {
    tool,
    mode,
    seconds: Number(seconds.toFixed(2)),
    first_transfer_seconds: Number(((first ?? NaN) / 1000).toFixed(2)),
    transfers_per_second: Math.round(TRANSFERS / seconds),
    stored,
    tool_cpu_seconds: Number(cpu.toFixed(2)),
    postgres_cpu_seconds: postgres === undefined ? undefined : Number((postgres / 1e6).toFixed(2)),
  };
}

async function runSvc(mode: string, rpcUrl: string, dir = root, tool = 'svc'): Promise<Omit<Run, 'proxy'>> {
  const connectionString = await freshDatabase(`bench_${tool.replace('-', '_')}_${mode}`);
  await migrate({ connectionString });
  const store = createStore({ connectionString });
  const { merchant } = await createMerchant(store, createSecretBox(Buffer.alloc(32, 1)), { name: 'bench' });
  for (const address of wallets) await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address, verifiedBy: 'operator' });
  const child = spawn(process.execPath, ['bin/svc.js', 'start'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH!,
      DATABASE_URL: connectionString,
      PORT: '0',
      LOG_LEVEL: process.env.BENCH_SVC_LOG_LEVEL ?? 'warn',
      SVC_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ponder-')),
      SVC_POLYGON_RPC_URL: rpcUrl,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    return await timed(tool, mode, child, async () => {
      const { rows } = await store.query<{ n: string }>("SELECT count(*)::text AS n FROM transfers WHERE chain = 'polygon'");
      return Number(rows[0]!.n);
    });
  } finally {
    child.kill('SIGKILL');
    await store.close();
  }
}

async function runPonder(mode: string, rpcUrl: string): Promise<Omit<Run, 'proxy'>> {
  const connectionString = await freshDatabase(`bench_ponder_${mode}`);
  const schema = 'bench';
  const client = new pg.Client({ connectionString });
  await client.connect();
  fs.rmSync(path.join(ponderDir, '.ponder'), { recursive: true, force: true });
  const child = spawn(
    process.execPath,
    [
      'node_modules/ponder/dist/esm/bin/ponder.js',
      '--log-level',
      'warn',
      'start',
      '--schema',
      schema,
      '--port',
      String(42000 + Math.floor(Math.random() * 2000)),
    ],
    {
      cwd: ponderDir,
      env: {
        PATH: process.env.PATH!,
        DATABASE_URL: connectionString,
        BENCH_RPC_URL: rpcUrl,
        BENCH_TOKEN: usdc,
        BENCH_WALLETS: wallets.join(','),
        BENCH_START_BLOCK: '0',
        CI: 'true',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  try {
    return await timed('ponder', mode, child, async () => {
      const { rows } = await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM "${schema}".transfers`);
      return Number(rows[0]!.n);
    });
  } finally {
    child.kill('SIGKILL');
    await client.end();
  }
}

const runs: Run[] = [];
try {
  await anvil.installChainTokens();
  await anvil.client.request({ method: 'evm_setBlockGasLimit' as never, params: [numberToHex(BigInt(PER_BLOCK) * 60_000n + 10_000_000n)] as never });
  const startedMint = Date.now();
  await mintMany(anvil, { token: usdc, recipients: wallets, count: TRANSFERS, firstAmount: 1n, perTx: PER_BLOCK });
  const head = await anvil.blockNumber();
  log(`minted ${TRANSFERS} transfers (${PER_BLOCK} a block, head ${head}) in ${((Date.now() - startedMint) / 1000).toFixed(1)} s`);
  const tools = [...values.tools.split(','), ...(values.against ? ['svc-against'] : [])];
  for (const mode of values.modes.split(',')) {
    for (const tool of tools) {
      const proxy = mode === 'proxy' ? await startProviderProxy({ target: anvil.rpcUrl, requestsPerSecond: Number(values.rate) }) : undefined;
      const rpcUrl = proxy?.url ?? anvil.rpcUrl;
      log(`${tool}, ${mode} …`);
      const run =
        tool === 'svc'
          ? await runSvc(mode, rpcUrl)
          : tool === 'svc-against'
            ? await runSvc(mode, rpcUrl, path.resolve(values.against!), tool)
            : await runPonder(mode, rpcUrl);
      runs.push({ ...run, ...(proxy ? { proxy: { ...proxy.stats } } : {}) });
      log(JSON.stringify(runs.at(-1)));
      await proxy?.close();
    }
  }
} finally {
  await anvil.stop();
  await admin.end();
  await database.close();
}
const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const ratios = Object.fromEntries(
  values.modes.split(',').map((mode) => {
    const [svc, against, ponder] = ['svc', 'svc-against', 'ponder'].map((tool) => runs.find((run) => run.tool === tool && run.mode === mode));
    const ratio = (run: Run | undefined) => (run && ponder ? Number((run.transfers_per_second / ponder.transfers_per_second).toFixed(2)) : null);
    return [mode, { svc: ratio(svc), ...(against ? { 'svc-against': ratio(against) } : {}) }];
  }),
);
console.log(
  JSON.stringify({ transfers: TRANSFERS, per_block: PER_BLOCK, wallets: WALLETS, load_average_at_end: load, svc_over_ponder: ratios, runs }, null, 2),
);
