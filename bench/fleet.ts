/**
 * Resource figures of the daemon's roles, for the Kubernetes requests and limits
 * (deploy/kubernetes, docs/operating.md "Resources"): starts the compiled daemon as the container
 * image does (`node dist/cli/entry.js start --role …`, SVC_STATELESS=true) as three processes, api,
 * ingest (polygon on anvil) and worker, on one Postgres; samples each process's RSS and CPU from
 * /proc while idle, then under load: sandbox sessions created, read and paid through the API
 * (every payment confirms and settles through the worker's engine and sends webhooks to a local
 * receiver), and a stream of token transfers into a watched wallet on anvil for the ingester.
 *
 *   npm run build && npx tsx bench/fleet.ts [--idle 10] [--seconds 30] [--connections 16]
 *
 * DATABASE_URL to use an existing Postgres; otherwise an embedded one in a temporary folder.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { getAddress, type Address } from 'viem';
import { startAnvil, freePort } from '../test/helpers/anvil.ts';
import { loadChains } from '../src/internal/chains.ts';
import { benchDatabase, percentile } from './lib.ts';

const { values } = parseArgs({
  options: { idle: { type: 'string', default: '10' }, seconds: { type: 'string', default: '30' }, connections: { type: 'string', default: '16' } },
});
const IDLE_S = Number(values.idle);
const LOAD_S = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s on Linux
const WALLET = getAddress('0x5555555555555555555555555555555555555555');

interface Sample {
  at: number;
  rssMiB: number;
  cpuTicks: number;
}

function sample(pid: number): Sample {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { at: performance.now(), rssMiB: rssKiB / 1024, cpuTicks: Number(stat[11]) + Number(stat[12]) };
}

/** CPU in cores over consecutive 5 s windows, and the mean over the whole span. */
function cpu(samples: Sample[]): { mean: number; p95Window: number } {
  const first = samples[0]!;
  const last = samples.at(-1)!;
  const windows: number[] = [];
  for (let i = 0; i < samples.length; i++) {
    const end = samples.find((s) => s.at >= samples[i]!.at + 5000);
    if (!end) break;
    windows.push((end.cpuTicks - samples[i]!.cpuTicks) / TICKS / ((end.at - samples[i]!.at) / 1000));
  }
  windows.sort((a, b) => a - b);
  return { mean: (last.cpuTicks - first.cpuTicks) / TICKS / ((last.at - first.at) / 1000), p95Window: percentile(windows, 95) };
}

async function startRole(role: string, env: Record<string, string>): Promise<{ child: ChildProcess; ready: Record<string, any> }> {
  const child = spawn(process.execPath, ['dist/cli/entry.js', 'start', '--role', role, '--json'], {
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const ready = await new Promise<Record<string, any>>((resolve, reject) => {
    lines.on('line', (line) => line.includes('"status":"running"') && resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
  return { child, ready };
}

async function main() {
  if (!fs.existsSync('dist/cli/entry.js')) throw new Error('run npm run build first: this bench runs the compiled daemon, as the image does');
  const database = await benchDatabase('fleet', 54368);
  const anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  const usdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
  const receiver = http.createServer((request, response) => request.resume().on('end', () => response.writeHead(200).end()));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const base = {
    DATABASE_URL: database.connectionString,
    SVC_STATELESS: 'true',
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    SVC_TRUST_PROXY: 'true',
  };
  const api = await startRole('api', { ...base, PORT: '0', SVC_METRICS_PORT: String(await freePort()) });
  const url: string = api.ready.url;
  const key: string = api.ready.bootstrap.testKey;
  const merchantId: string = api.ready.bootstrap.merchantId;
  const cli = (...args: string[]) =>
    new Promise<void>((resolve) =>
      spawn(process.execPath, ['dist/cli/entry.js', ...args], { env: { PATH: process.env.PATH!, ...base }, stdio: 'ignore' }).once('exit', () => resolve()),
    );
  await cli('merchants', 'update', '--merchant', merchantId, '--create-per-minute', '1000000', '--read-per-minute', '1000000', '--write-per-minute', '1000000');
  await cli('wallets', 'add', '--merchant', merchantId, '--wallet', `polygon:${WALLET}`);
  const worker = await startRole('worker', { ...base, PORT: '0', SVC_METRICS_PORT: String(await freePort()), SVC_WEBHOOK_ALLOW_PRIVATE: 'true' });
  const ingest = await startRole('ingest', { ...base, PORT: '0', SVC_METRICS_PORT: String(await freePort()), SVC_POLYGON_RPC_URL: anvil.rpcUrl });
  const roles = { api: api.child, ingest: ingest.child, worker: worker.child };
  const pool = new Pool(url, { connections: CONNECTIONS });
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      'x-forwarded-for': `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
    };
    if (body) headers['content-type'] = 'application/json';
    const response = await pool.request({ method, path, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: response.statusCode, body: (await response.body.text()) as string };
  };
  await call('POST', '/api/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` });

  const samples: Record<string, Sample[]> = { api: [], ingest: [], worker: [] };
  const timer = setInterval(() => {
    for (const [role, child] of Object.entries(roles)) samples[role]!.push(sample(child.pid!));
  }, 500);
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
  const idleEnd = performance.now();

  const deadline = performance.now() + LOAD_S * 1000;
  let requests = 0;
  let paid = 0;
  const transfers = (async () => {
    let count = 0;
    while (performance.now() < deadline) {
      await anvil.pay(usdc, WALLET, 1_000_000n + BigInt(count++));
    }
    return count;
  })();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_unused, index) => {
      while (performance.now() < deadline) {
        const created = await call('POST', '/api/v1/sessions', { amount: '25.00', currency: 'USDC', chain: 'polygon' });
        requests++;
        if (created.status !== 201) continue;
        const id = JSON.parse(created.body).id as string;
        await call('GET', `/api/v1/sessions/${id}`);
        requests++;
        // One session in four is paid: the worker's engine confirms and settles it, and sends its webhooks.
        if (index % 4 === 0) {
          await call('POST', `/api/v1/sandbox/sessions/${id}/pay`, { outcome: 'exact' });
          requests++;
          paid++;
        }
      }
    }),
  );
  const sent = await transfers;
  clearInterval(timer);
  console.log(
    `load: ${LOAD_S} s, ${(requests / LOAD_S).toFixed(0)} API requests/s over ${CONNECTIONS} connections, ${paid} sandbox payments, ${sent} polygon transfers on anvil; load average ${(
      await import('node:os')
    )
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')}`,
  );
  console.log('role     idle RSS  peak RSS  idle CPU  load CPU (mean / p95 of 5 s windows)');
  for (const [role, list] of Object.entries(samples)) {
    const idle = list.filter((s) => s.at <= idleEnd);
    const load = list.filter((s) => s.at >= idleEnd);
    const idleRss = Math.max(...idle.map((s) => s.rssMiB));
    const peakRss = Math.max(...list.map((s) => s.rssMiB));
    const loaded = cpu(load);
    console.log(
      `${role.padEnd(8)} ${idleRss.toFixed(0).padStart(5)} MiB ${peakRss.toFixed(0).padStart(5)} MiB  ${cpu(idle).mean.toFixed(3)}     ${loaded.mean.toFixed(2)} / ${loaded.p95Window.toFixed(2)} cores`,
    );
  }
  for (const child of Object.values(roles)) child.kill('SIGTERM');
  await Promise.all(Object.values(roles).map((child) => new Promise((resolve) => child.once('exit', resolve))));
  await pool.close();
  receiver.close();
  await anvil.stop();
  await database.close();
}

await main();
