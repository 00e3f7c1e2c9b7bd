import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { distIsCurrent } from '../../bin/freshness.js';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/anvil.ts';

const root = path.resolve(import.meta.dirname, '../..');
const db = useTestDatabase('bundled');
let child: ChildProcess | undefined;
let url: string;
let chunks: string;

/**
 * Issue 28: scripts/build.mjs bundles @fastify/swagger-ui (it was loaded file by file with yaml
 * and @fastify/static at every API start) and patches pg and find-my-way so that `svc start` does
 * less at load. These run the compiled `svc` (bin/svc.js runs dist/), as a user does.
 */
beforeAll(async () => {
  if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
  chunks = fs
    .readdirSync(path.join(root, 'dist/chunks'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => fs.readFileSync(path.join(root, 'dist/chunks', name), 'utf8'))
    .join('\n');
  const port = await freePort();
  child = spawn(process.execPath, ['bin/svc.js', 'start', '--role', 'api'], {
    cwd: root,
    env: { PATH: process.env.PATH!, DATABASE_URL: db.connectionString, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  url = `http://127.0.0.1:${port}`;
  for (let waited = 0; waited < 60_000; waited += 100) {
    if (
      await fetch(`${url}/api/v1/health`).then(
        (response) => response.ok,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('svc start did not answer /health within 60 s');
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child!.once('exit', resolve));
  }
});

test('the compiled daemon serves /docs from the bundled @fastify/swagger-ui: its page, its files, a 404 for a missing one', async () => {
  // Bundled, not imported from node_modules at run time (which loads its CommonJS tree file by file).
  expect(chunks).not.toMatch(/from ["']@fastify\/swagger-ui["']/);
  expect(chunks).toMatch(/^\/\/ .*node_modules\/@fastify\/swagger-ui\/lib\/routes\.js$/m);
  const page = await fetch(`${url}/docs`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('swagger-ui');
  const scripts = [...html.matchAll(/src="([^"]+\.js)"/g)].map((match) => match[1]!);
  expect(scripts.length).toBeGreaterThan(0);
  for (const script of scripts) {
    const asset = await fetch(new URL(script, page.url));
    expect(asset.status, script).toBe(200);
    expect((await asset.arrayBuffer()).byteLength, script).toBeGreaterThan(0);
  }
  const initializer = await fetch(`${url}/docs/static/swagger-initializer.js`);
  expect(await initializer.text()).toContain('/api/v1/openapi.json');
  expect(initializer.headers.get('content-security-policy')).toContain("style-src 'self' 'unsafe-inline'");
  const missing = await fetch(`${url}/docs/static/no-such-file.js`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toEqual({ error: expect.any(String) });
});

test("pg loads without constructing a Response (Node 20's built-in undici) and the router compiles prefix tests on first lookup; routes still match", async () => {
  expect(chunks).toContain('= getNodejsStreamFuncs()');
  expect(chunks).not.toMatch(/= getStreamFuncs\(\)/);
  expect(chunks).toContain('match ??= compilePrefixMatch(');
  expect(chunks).toMatch(/var glob = \(\.\.\.args\) => require_/);
  // Static routes that share prefixes, both API prefixes, a parametric one and a miss.
  for (const [route, status] of [
    ['/api/v1/health', 200],
    ['/v1/health', 200],
    ['/api/v1/openapi.json', 200],
    ['/api/v1/payments/pay_nope', 401],
    ['/api/v1/healthz', 404],
    ['/ready', 200],
  ] as const) {
    expect((await fetch(`${url}${route}`)).status, route).toBe(status);
  }
});
