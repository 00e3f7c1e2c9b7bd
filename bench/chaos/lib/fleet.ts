/**
 * The daemon's roles as real processes (`node bin/svc.js start --role …`, as the image runs
 * them), for the chaos runs: api, two ingest and a worker on one DATABASE_URL, each restarted
 * after it dies as a Kubernetes Deployment would (after `restartDelayMs`). Each role's stderr goes
 * to a file in the run's folder, for a post-mortem.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { freePort } from '../../../test/helpers/anvil.ts';

export type RoleName = 'api' | 'ingest' | 'worker';

export interface RoleProcess {
  readonly name: string;
  readonly role: RoleName;
  child: ChildProcess;
  /** Times this role's process exited on its own (not by `kill`), and was restarted. */
  crashes: number;
  kills: number;
  /** The ready line's URL (api). */
  url?: string;
  /** The current process's metrics endpoint (`/metrics`); counters restart with the process. */
  metricsUrl?: string;
  /** SIGKILL now; the fleet starts it again after `restartDelayMs`. Resolves once it is running again. */
  kill(): Promise<void>;
  /** Resolves once a process of this role is running (its ready line). */
  running(): Promise<void>;
}

export interface Fleet {
  roles: RoleProcess[];
  byName(name: string): RoleProcess;
  apiUrl: string;
  bootstrap: { merchantId: string; testKey: string };
  env: Record<string, string>;
  logDir: string;
  /** Runs `svc <args>` with the fleet's environment; resolves with its stdout. */
  cli(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts `roles` (names like `ingest-2` map to role `ingest`), the first one first (it applies the
 * migrations and, on an empty database, creates the first merchant).
 */
export async function startFleet(params: {
  databaseUrl: string;
  rpcUrls: Record<string, string>;
  names: string[];
  logDir: string;
  restartDelayMs?: number;
  extraEnv?: Record<string, string>;
}): Promise<Fleet> {
  fs.mkdirSync(params.logDir, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    DATABASE_URL: params.databaseUrl,
    SVC_STATELESS: 'true',
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
    HOST: '127.0.0.1',
    SVC_TRUST_PROXY: 'true',
    SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(process.env.SVC_FROM_SOURCE ? { SVC_FROM_SOURCE: process.env.SVC_FROM_SOURCE } : {}),
    ...params.rpcUrls,
    ...params.extraEnv,
  };
  let stopping = false;
  let apiUrl = '';
  let bootstrap: Fleet['bootstrap'] | undefined;

  async function spawnRole(name: string, role: RoleName): Promise<{ child: ChildProcess; ready: Record<string, any>; metricsUrl: string }> {
    const log = fs.createWriteStream(path.join(params.logDir, `${name}.log`), { flags: 'a' });
    // The api keeps its port across restarts: clients (and the run's load) use one URL.
    const port = role === 'api' && apiUrl ? new URL(apiUrl).port : '0';
    const metricsPort = await freePort();
    const child = spawn(process.execPath, ['bin/svc.js', 'start', '--role', role, '--json'], {
      env: { ...env, PORT: port, SVC_METRICS_PORT: String(metricsPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.pipe(log);
    const lines = readline.createInterface({ input: child.stdout! });
    const ready = await new Promise<Record<string, any>>((resolve, reject) => {
      lines.on('line', (line) => {
        if (line.includes('"status":"running"')) resolve(JSON.parse(line));
        else log.write(`${line}\n`);
      });
      child.once('exit', (code, signal) => reject(new Error(`${name} exited with ${code ?? signal} before it was running (see ${log.path})`)));
    });
    return { child, ready, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
  }

  function manage(name: string): RoleProcess {
    const role = name.replace(/-\d+$/, '') as RoleName;
    let current: Promise<void> = Promise.resolve();
    let killing = false;
    const handle: RoleProcess = {
      name,
      role,
      child: undefined as unknown as ChildProcess,
      crashes: 0,
      kills: 0,
      async kill() {
        await current;
        killing = true;
        handle.kills++;
        const exited = new Promise((resolve) => handle.child.once('exit', resolve));
        handle.child.kill('SIGKILL');
        await exited;
        killing = false;
        await current;
      },
      running: () => current,
    };
    const start = async (): Promise<void> => {
      for (;;) {
        try {
          const { child, ready, metricsUrl } = await spawnRole(name, role);
          handle.child = child;
          handle.metricsUrl = metricsUrl;
          if (ready.url) apiUrl ||= ready.url;
          if (ready.bootstrap) bootstrap ??= ready.bootstrap;
          child.once('exit', () => {
            if (stopping) return;
            if (!killing) handle.crashes++;
            current = new Promise((resolve) => setTimeout(resolve, params.restartDelayMs ?? 500)).then(start);
          });
          return;
        } catch (error) {
          // A role that cannot start (its database unreachable) is retried, as a pod would be.
          if (stopping) return;
          handle.crashes++;
          fs.appendFileSync(path.join(params.logDir, `${name}.log`), `harness: ${(error as Error).message}\n`);
          await new Promise((resolve) => setTimeout(resolve, params.restartDelayMs ?? 500));
        }
      }
    };
    current = start();
    return handle;
  }

  const roles: RoleProcess[] = [];
  const first = manage(params.names[0]!);
  roles.push(first);
  await first.running();
  for (const name of params.names.slice(1)) roles.push(manage(name));
  await Promise.all(roles.map((role) => role.running()));
  if (!bootstrap) throw new Error('the first role printed no bootstrap: the database was not empty');
  const cli = (...args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['bin/svc.js', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout!.on('data', (chunk) => (out += chunk));
      child.stderr!.on('data', (chunk) => (err += chunk));
      child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`svc ${args.join(' ')}: ${code} ${err}`))));
    });
  return {
    roles,
    byName: (name) => roles.find((role) => role.name === name)!,
    apiUrl,
    bootstrap,
    env,
    logDir: params.logDir,
    cli,
    async stop() {
      stopping = true;
      await Promise.all(
        roles.map(async (role) => {
          await role.running();
          if (role.child.exitCode !== null || role.child.signalCode !== null) return;
          const exited = new Promise((resolve) => role.child.once('exit', resolve));
          role.child.kill('SIGTERM');
          const timer = setTimeout(() => role.child.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}
