import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

/**
 * One place for test helpers: a test folder holds its `*.test.ts` files (and data), and every
 * module the tests share, or that one folder's tests import, lives in test/helpers/, named after
 * what it provides (api.ts, evmIngest.ts, webhookReceiver.ts). The two other modules are
 * vitest's global setup and the Solidity build script that sits beside its sources.
 */
const root = path.resolve(import.meta.dirname, '..');
const OUTSIDE_HELPERS = ['globalSetup.ts', 'contracts/build.ts'];

function modules(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return modules(file);
    return /\.(ts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.test.ts') ? [path.relative(root, file)] : [];
  });
}

test('every test helper module is in test/helpers/', () => {
  const misplaced = modules(root).filter((file) => !file.startsWith(`helpers${path.sep}`) && !OUTSIDE_HELPERS.includes(file));
  expect(misplaced).toEqual([]);
});
