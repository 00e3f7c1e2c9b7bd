import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, describe, expect, test } from 'vitest';
import { serverPort } from './helpers/anvil.ts';
import { main } from '../src/cli/main.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-daemon-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Starts `svc start --json` as a user would, with no DATABASE_URL (so an embedded Postgres under
 * dataDir), and resolves with its first stdout line once it is ready.
 */
async function startDaemon(env: Record<string, string>) {
  const child = spawn(process.execPath, ['bin/svc.js', 'start', '--json'], {
    env: { PATH: process.env.PATH!, HOME: process.env.HOME!, SVC_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  // Logs are JSON lines on stdout too; the ready line is the one with "status": "running".
  const lines = readline.createInterface({ input: child.stdout! });
  const seen: string[] = [];
  const first = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      seen.push(line);
      if (line.includes('"status":"running"')) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code}: ${stderr}\n${seen.join('\n')}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, ready: JSON.parse(first), exited, stderr: () => stderr, seen };
}

describe('svc start', () => {
  let pgPort: number;

  test('first start: embedded Postgres, health 200, a merchant and test key printed once; SIGTERM stops cleanly', async () => {
    pgPort = await serverPort();
    const daemon = await startDaemon({ SVC_EMBEDDED_PG_PORT: String(pgPort) });
    expect(daemon.ready).toMatchObject({ status: 'running', roles: ['api', 'ingest', 'worker'] });
    expect(daemon.ready.bootstrap.testKey).toMatch(/^svc_test_/);
    expect(daemon.ready.bootstrap.merchantId).toMatch(/^mer_/);

    const health = await fetch(`${daemon.ready.url}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'healthy', database: 'ok' });
    expect((await fetch(`${daemon.ready.url}/v1/health`)).status).toBe(200);

    // The CLI, run while the daemon holds the embedded cluster, attaches to it.
    let out = '';
    const code = await main(['keys', 'list', '--json'], {
      env: { SVC_DATA_DIR: dataDir, SVC_EMBEDDED_PG_PORT: String(pgPort), LOG_LEVEL: 'warn' },
      out: (text) => (out += text),
      err: () => {},
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject([{ merchantId: daemon.ready.bootstrap.merchantId, livemode: false, revokedAt: null }]);

    // Logs never carry the key.
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(daemon.stderr()).not.toContain(daemon.ready.bootstrap.testKey);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  test('second start on the same data: no new merchant or key is printed', async () => {
    const daemon = await startDaemon({ SVC_EMBEDDED_PG_PORT: String(pgPort) });
    expect(daemon.ready.bootstrap).toBeNull();
    // SIGINT right after the ready line: handlers are installed before start-up, so this drains.
    daemon.child.kill('SIGINT');
    expect(await daemon.exited).toBe(0);
  });

  test('a bad configuration stops start-up with a message naming the variable', async () => {
    const child = spawn(process.execPath, ['bin/svc.js', 'start'], { env: { PATH: process.env.PATH!, PORT: 'http' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toContain('PORT="http": must be an integer from 0 to 65535');
  });

  test('a first start that fails after making the merchant (its port taken) still shows the test key, which then works', async () => {
    const ownData = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-daemon-busy-'));
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const takenPort = (busy.address() as net.AddressInfo).port;
    const pgPortOwn = await serverPort();
    const env = { PATH: process.env.PATH!, HOME: process.env.HOME!, SVC_DATA_DIR: ownData, SVC_EMBEDDED_PG_PORT: String(pgPortOwn), LOG_LEVEL: 'warn' };
    try {
      const child = spawn(process.execPath, ['bin/svc.js', 'start'], { env: { ...env, PORT: String(takenPort) }, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(1);
      expect(stderr).toContain('EADDRINUSE');
      const key = /test API key:\s+(svc_test_\S+)/.exec(stdout)?.[1];
      expect(key, stdout).toBeDefined();
      // The next start on a free port creates nothing new, and the key shown before works.
      await new Promise<void>((resolve) => busy.close(() => resolve()));
      const second = spawn(process.execPath, ['bin/svc.js', 'start', '--json'], { env: { ...env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(second);
      const lines = readline.createInterface({ input: second.stdout! });
      const ready = await new Promise<{ url: string; bootstrap: unknown }>((resolve) =>
        lines.on('line', (line) => line.includes('"status":"running"') && resolve(JSON.parse(line))),
      );
      expect(ready.bootstrap).toBeNull();
      const answer = await fetch(`${ready.url}/api/v1/payments?limit=1`, { headers: { authorization: `Bearer ${key}` } });
      expect(answer.status).toBe(200);
      const exited = new Promise((resolve) => second.once('exit', resolve));
      second.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      fs.rmSync(ownData, { recursive: true, force: true });
    }
  });
});
