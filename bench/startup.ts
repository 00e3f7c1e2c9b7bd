/**
 * Start-up time of `svc start` on an existing, migrated database (issue 16 goal 6): from spawning
 * the process to (a) the API answering `GET /api/v1/health` with 200 and (b) the polygon ingester's
 * first JSON-RPC request reaching a local recording endpoint. Runs the compiled dist/ (what
 * `npm start` runs after `npm install`) and the TypeScript sources through tsx
 * (`SVC_FROM_SOURCE=1`), alternating, in one run.
 *
 *   npx tsx bench/startup.ts [--runs 5]
 */
import http from 'node:http';
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { benchDatabase, percentile } from './lib.ts';
import { migrate } from '../src/store/migrate.ts';
import { distIsCurrent } from '../bin/freshness.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(values.runs);
const root = new URL('..', import.meta.url).pathname;
if (!distIsCurrent(root)) throw new Error('dist/ is older than src/: run `npm run build` first');

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
      result: call.method === 'eth_chainId' ? '0x89' : call.method === 'eth_getLogs' ? [] : null,
    });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.isArray(calls) ? calls.map(answer) : answer(calls)));
  });
});
await new Promise<void>((resolve) => rpc.listen(0, '127.0.0.1', resolve));
const rpcUrl = `http://127.0.0.1:${(rpc.address() as { port: number }).port}`;

async function once(fromSource: boolean): Promise<{ api: number; rpc: number }> {
  firstRpcAt = undefined;
  const port = 18000 + Math.floor(Math.random() * 2000);
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/svc.js', 'start'], {
    cwd: root,
    env: {
      PATH: process.env.PATH!,
      DATABASE_URL: database.connectionString,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      SVC_POLYGON_RPC_URL: rpcUrl,
      ...(fromSource ? { SVC_FROM_SOURCE: '1' } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let api: number | undefined;
  while (api === undefined || firstRpcAt === undefined) {
    if (api === undefined) {
      const ok = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) api = performance.now() - started;
    }
    if (performance.now() - started > 30_000) throw new Error('not ready after 30 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  const result = { api, rpc: firstRpcAt - started };
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return result;
}

const figures = { dist: { api: [] as number[], rpc: [] as number[] }, source: { api: [] as number[], rpc: [] as number[] } };
await once(false); // warm the OS file cache once, unrecorded
for (let i = 0; i < runs; i++) {
  for (const mode of ['dist', 'source'] as const) {
    const r = await once(mode === 'source');
    figures[mode].api.push(r.api);
    figures[mode].rpc.push(r.rpc);
  }
}
const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${percentile(s, 50).toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)})`;
};
console.log(`svc start on an existing database, ${runs} runs each, alternating (npx tsx bench/startup.ts --runs ${runs}):`);
for (const mode of ['dist', 'source'] as const) {
  console.log(`  ${mode.padEnd(6)} API answering: ${fmt(figures[mode].api)}; first RPC call: ${fmt(figures[mode].rpc)}`);
}
rpc.close();
await database.close();
