#!/usr/bin/env node
// The `svc` command. It runs the compiled JavaScript in dist/ (built by `npm install`'s `prepare`
// step, or `npm run build`) when dist/ was compiled from the sources as they are now; after an
// edit to src/ it runs the TypeScript sources through tsx's loader instead, so a change is never
// run stale and no build step stands between an edit and `npm start`. SVC_FROM_SOURCE=1 forces
// the sources.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { distIsCurrent } from './freshness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let main;
if (process.env.SVC_FROM_SOURCE !== '1' && distIsCurrent(root)) {
  ({ main } = await import('../dist/cli/main.js'));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
