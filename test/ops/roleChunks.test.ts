import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { distIsCurrent } from '../../bin/freshness.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Every file of dist/ that `file` loads before its code runs: its static imports, transitively. */
function staticClosure(file: string): string[] {
  const seen = new Set<string>();
  const pending = [file];
  while (pending.length > 0) {
    const current = pending.pop()!;
    if (seen.has(current)) continue;
    seen.add(current);
    const text = fs.readFileSync(current, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\b[^;]*?["'](\.{1,2}\/[^"']+)["']/gm)) pending.push(path.resolve(path.dirname(current), match[1]!));
  }
  return [...seen];
}

// Issue 28: `svc start` loads each role's stages only when it runs that role. dist/ is one bundle
// with a chunk per role (scripts/build.mjs) that src/daemon.ts imports dynamically; a static import
// of a role's module from the daemon's wiring would pull it (fastify, typebox, pg-boss, the
// ingesters) into every process's start again.
test('the compiled svc command loads no role’s stages before it knows the roles', () => {
  if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
  const closure = staticClosure(path.join(root, 'dist/cli/entry.js'));
  const text = closure.map((file) => fs.readFileSync(file, 'utf8')).join('\n');
  // esbuild heads each bundled module with a `// <path>` comment.
  for (const absent of [
    /^\/\/ src\/api\/index\.ts$/m,
    /^\/\/ src\/http\.ts$/m,
    /^\/\/ src\/dashboard\//m,
    /^\/\/ src\/ingest\/evm\/ingester\.ts$/m,
    /node_modules\/fastify\/fastify\.js$/m,
    /node_modules\/pg-boss\//m,
    /node_modules\/typebox\//m,
  ]) {
    expect(text).not.toMatch(absent);
  }
  // …and they are in dist/, one import away.
  const all = fs.readdirSync(path.join(root, 'dist/chunks')).map((name) => fs.readFileSync(path.join(root, 'dist/chunks', name), 'utf8'));
  expect(all.some((chunk) => /^\/\/ src\/api\/index\.ts$/m.test(chunk))).toBe(true);
  expect(all.some((chunk) => /node_modules\/pg-boss\//m.test(chunk))).toBe(true);
});

// Issue 28: the CLI imports each command when it runs (src/cli/main.ts). A static import of every
// command put the webhook commands' delivery code and undici (1 MB) into every `svc start`.
test('`svc start` loads no other command’s code: no delivery code or undici before the worker role loads it', () => {
  if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
  const start = fs.readdirSync(path.join(root, 'dist/chunks')).find((name) => /^start-[A-Z0-9]+\.js$/.test(name));
  expect(start).toBeDefined();
  const closure = [...staticClosure(path.join(root, 'dist/cli/entry.js')), ...staticClosure(path.join(root, 'dist/chunks', start!))];
  const text = closure.map((file) => fs.readFileSync(file, 'utf8')).join('\n');
  expect(text).toMatch(/^\/\/ src\/cli\/commands\/start\.ts$/m);
  for (const absent of [/^\/\/ src\/cli\/commands\/(webhooks|deposits|merchants)\.ts$/m, /^\/\/ src\/delivery\//m, /node_modules\/undici\//m]) {
    expect(text).not.toMatch(absent);
  }
});

// Issue 28: the API imports the delivery stage (its webhook routes) but sends no webhook: undici
// is imported at a transport's first send (src/delivery/transport.ts), not with the API's chunk.
test('the API’s chunk loads no undici', () => {
  if (!distIsCurrent(root)) execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { stdio: 'ignore' });
  const http = fs.readdirSync(path.join(root, 'dist/chunks')).find((name) => /^http-[A-Z0-9]+\.js$/.test(name));
  expect(http).toBeDefined();
  const text = staticClosure(path.join(root, 'dist/chunks', http!))
    .map((file) => fs.readFileSync(file, 'utf8'))
    .join('\n');
  expect(text).toMatch(/^\/\/ src\/delivery\/transport\.ts$/m);
  expect(text).not.toMatch(/node_modules\/undici\//m);
});
