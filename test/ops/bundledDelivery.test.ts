import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { distIsCurrent } from '../../bin/freshness.js';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/anvil.ts';
import { waitFor } from '../helpers/waitFor.ts';

const root = path.resolve(import.meta.dirname, '../..');
const db = useTestDatabase('bundled_delivery');
let child: ChildProcess | undefined;
let receiver: http.Server | undefined;

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child!.once('exit', resolve));
  }
  receiver?.closeAllConnections();
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
});

/**
 * The README's quick start on the compiled daemon (what `npm start` runs): a first start, a
 * sandbox session paid, its webhook delivered. The sources' tests do not cover the bundle's module
 * shapes: built with undici imported at the first send, the worker sent nothing ("Agent is not a
 * constructor": a CommonJS package's namespace in an ES chunk holds only `default`).
 */
test('the compiled daemon delivers a sandbox payment’s webhooks', async () => {
  if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
  const received: string[] = [];
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['x-service-event']));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const port = await freePort();
  child = spawn(process.execPath, ['bin/svc.js', 'start', '--json'], {
    cwd: root,
    env: {
      PATH: process.env.PATH!,
      DATABASE_URL: db.connectionString,
      PORT: String(port),
      LOG_LEVEL: process.env.BUNDLED_LOG_LEVEL ?? 'warn',
      SVC_SANDBOX_BLOCK_MS: '50',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  const ready = await waitFor(
    async () =>
      output
        .split('\n')
        .map((line) => (line.startsWith('{') ? JSON.parse(line) : undefined))
        .find((line) => line?.status === 'running'),
    'the daemon running',
    60_000,
  );
  const key = ready.bootstrap.testKey as string;
  const api = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port}/api/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(response.status, `${method} ${route}`).toBeLessThan(300);
    return (await response.json()) as { id: string };
  };
  await api('POST', '/webhooks', { url: hook });
  const session = await api('POST', '/sessions', { amount: '25.00', currency: 'USDC', chain: 'polygon' });
  await api('POST', `/sandbox/sessions/${session.id}/pay`, { outcome: 'exact' });
  await waitFor(async () => received.includes('payment.confirmed'), 'payment.confirmed delivered', 60_000);
  expect(received).toContain('payment.confirming');
}, 180_000);
