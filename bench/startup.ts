/**
 * Start-up time of `svc start` on an existing, migrated database (issue 16 goal 6, issue 28 goal
 * 1), per role: from spawning the process to (a) the process answering `/health` (the API port's
 * `GET /api/v1/health` when it runs the api role, the metrics port's `/health` otherwise) and
 * (b) the polygon ingester's first JSON-RPC request reaching a local recording endpoint (roles
 * with ingest). Beside each wall-clock figure, the CPU the process had used by then (user +
 * system, from /proc): on a machine shared with other work the wall clock measures the queue
 * for the cores as much as the start, the CPU does not.
 *
 * Runs the compiled dist/ (what `npm start` runs after `npm install`); `--against DIR` runs another
 * checkout's built dist/ too (say the commit before a change), alternating with this one in the
 * same run, and `--source` adds the TypeScript sources through tsx (`SVC_FROM_SOURCE=1`).
 *
 *   npx tsx bench/startup.ts [--runs 5] [--roles 'api,ingest,worker;api;ingest;worker'] [--against DIR] [--source]
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { benchDatabase, percentile } from './lib.ts';
import { migrate } from '../src/store/migrate.ts';
import { distIsCurrent } from '../bin/freshness.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    roles: { type: 'string', default: 'api,ingest,worker;api;ingest;worker' },
    against: { type: 'string' },
    source: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const root = new URL('..', import.meta.url).pathname;
if (!distIsCurrent(root)) throw new Error('dist/ is older than src/: run `npm run build` first');
const against = values.against ? path.resolve(values.against) : undefined;
if (against && !fs.existsSync(path.join(against, 'dist/BUILD'))) throw new Error(`${against} has no built dist/: run \`npm run build\` there`);

const database = await benchDatabase('startup', 54391);
await migrate({ connectionString: database.connectionString });

// A JSON-RPC endpoint that records when the first request arrives and answers like an idle chain.
let firstRpcAt: number | undefined;
const rpc = http.createServer((req, res) => {
  firstRpcAt ??= performance.now();
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const calls = JSON.parse(body);
    const answer = (call: { id: number; method: string }) => ({
      jsonrpc: '2.0',
      id: call.id,
      result: call.method === 'eth_chainId' ? '0x89' : call.method === 'eth_getLogs' ? [] : call.method === 'eth_blockNumber' ? '0x10' : null,
    });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.isArray(calls) ? calls.map(answer) : answer(calls)));
  });
});
await new Promise<void>((resolve) => rpc.listen(0, '127.0.0.1', resolve));
const rpcUrl = `http://127.0.0.1:${(rpc.address() as { port: number }).port}`;

/** CPU milliseconds (user + system) the process has used, from /proc (Linux; 10 ms ticks). */
function cpuMs(child: ChildProcess): number {
  try {
    const fields = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

interface Figures {
  ready: number;
  readyCpu: number;
  rpc: number | undefined;
  rpcCpu: number | undefined;
}

async function once(dir: string, roles: string, fromSource: boolean): Promise<Figures> {
  firstRpcAt = undefined;
  const port = 18000 + Math.floor(Math.random() * 2000);
  const metricsPort = port + 2000;
  const ingests = roles.includes('ingest');
  const healthUrl = roles.includes('api') ? `http://127.0.0.1:${port}/api/v1/health` : `http://127.0.0.1:${metricsPort}/health`;
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/svc.js', 'start', '--role', roles], {
    cwd: dir,
    env: {
      PATH: process.env.PATH!,
      DATABASE_URL: database.connectionString,
      PORT: String(port),
      SVC_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
      SVC_POLYGON_RPC_URL: rpcUrl,
      ...(fromSource ? { SVC_FROM_SOURCE: '1' } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let ready: number | undefined;
  let readyCpu = NaN;
  let rpcCpu: number | undefined;
  while (ready === undefined || (ingests && firstRpcAt === undefined)) {
    if (ingests && firstRpcAt !== undefined && rpcCpu === undefined) rpcCpu = cpuMs(child);
    if (ready === undefined) {
      const ok = await fetch(healthUrl).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) {
        ready = performance.now() - started;
        readyCpu = cpuMs(child);
      }
    }
    if (performance.now() - started > 60_000) throw new Error(`${roles} not ready after 60 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
  if (ingests && rpcCpu === undefined) rpcCpu = cpuMs(child);
  const result = { ready, readyCpu, rpc: firstRpcAt === undefined ? undefined : firstRpcAt - started, rpcCpu };
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return result;
}

const modes: { label: string; dir: string; source: boolean }[] = [{ label: 'this dist', dir: root, source: false }];
if (against) modes.push({ label: `${path.basename(against)} dist`, dir: against, source: false });
if (values.source) modes.push({ label: 'this source', dir: root, source: true });
const roleSets = values.roles.split(';');
const results = new Map<string, Figures[]>();
await once(root, 'api,ingest,worker', false); // warm the OS file cache once, unrecorded
if (against) await once(against, 'api,ingest,worker', false);
for (let i = 0; i < runs; i++) {
  for (const roles of roleSets) {
    for (const mode of modes) {
      const key = `${mode.label}|${roles}`;
      results.set(key, [...(results.get(key) ?? []), await once(mode.dir, roles, mode.source)]);
    }
  }
}
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${median(xs).toFixed(0)} ms (${s[0]!.toFixed(0)}-${s.at(-1)!.toFixed(0)})`;
};
const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(
  `svc start on a migrated database, ${runs} runs each, alternating (npx tsx bench/startup.ts ${process.argv.slice(2).join(' ')}); load average now ${load}`,
);
console.log('medians (min-max); CPU = user + system CPU of the process by then');
for (const roles of roleSets) {
  for (const mode of modes) {
    const figures = results.get(`${mode.label}|${roles}`)!;
    const rpcs = figures.flatMap((f) => (f.rpc === undefined ? [] : [f.rpc]));
    const rpcCpus = figures.flatMap((f) => (f.rpcCpu === undefined ? [] : [f.rpcCpu]));
    const parts = [
      `health ${fmt(figures.map((f) => f.ready))}, CPU ${median(figures.map((f) => f.readyCpu)).toFixed(0)} ms`,
      ...(rpcs.length > 0 ? [`first RPC ${fmt(rpcs)}, CPU ${median(rpcCpus).toFixed(0)} ms`] : []),
    ];
    console.log(`  ${roles.padEnd(17)} ${mode.label.padEnd(18)} ${parts.join('; ')}`);
  }
}
rpc.close();
await database.close();
