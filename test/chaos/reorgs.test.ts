import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';

// The short version of bench/chaos/reorgs.ts (docs/reliability.md "Reorgs"): the same fleet
// (api, ingest, worker processes), payments and audit, 12 reorgs instead of 1,000. The run is a
// script with its own processes, so it runs as one, on this test's database.
const root = path.resolve(import.meta.dirname, '../..');
const db = useTestDatabase('chaos_reorgs');

test('random reorgs during live payments: each counted once, the deep ones alerted, every session exact to the base unit', { timeout: 240_000 }, async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/chaos/reorgs.ts', '--size', '12'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: db.connectionString },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect({ code, tail: output.split('\n').slice(-12).join('\n') }).toMatchObject({ code: 0 });
  expect(output).toMatch(/^PASS$/m);
  const [, made, counted] = output.match(/reorgs: (\d+) .*\n.*ingester: (\d+) reorgs counted/) ?? [];
  expect(Number(made)).toBe(12);
  expect(Number(counted)).toBe(12);
  expect(output).toMatch(/0 lost, 0 duplicated, 0 phantom/);
});
