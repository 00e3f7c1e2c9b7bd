#!/usr/bin/env node
// Compiles src/ to dist/ (tsc emits without type checking: `npm run typecheck` checks types), copies
// the checkout page's and the dashboard's static assets beside the compiled code, and writes dist/BUILD with the
// newest source mtime it compiled, which bin/svc.js compares to decide whether dist/ is current.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { newestSourceMtime } from '../bin/freshness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const startedAt = newestSourceMtime(path.join(root, 'src'));

fs.rmSync(dist, { recursive: true, force: true });
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  // A production-only install (npm install --omit=dev) has no compiler: bin/svc.js then runs the
  // sources through tsx. The container image builds dist/ in its build stage instead.
  console.warn('svc build: typescript is not installed; skipping dist/ (the sources run through tsx)');
  process.exit(0);
}
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--noCheck'], { stdio: 'inherit' });
fs.cpSync(path.join(root, 'src/checkout/assets'), path.join(dist, 'checkout/assets'), { recursive: true });
fs.cpSync(path.join(root, 'src/dashboard/assets'), path.join(dist, 'dashboard/assets'), { recursive: true });
fs.writeFileSync(path.join(dist, 'BUILD'), `${JSON.stringify({ newestSourceMtimeMs: startedAt })}\n`);
