import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, test } from 'vitest';

/**
 * The short Postgres failover run (bench/chaos/failover.ts, docs/reliability.md): a synchronous
 * standby, the fleet as processes behind a router that follows the promotion, live payments and
 * reads, the primary SIGKILLed and the standby promoted; the run's own audit decides (exit 0 only
 * when every transfer is counted once, every acknowledged session is exact, every event delivered).
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

test('a synchronous standby promoted under load loses, duplicates and invents nothing', { timeout: 600_000 }, async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/chaos/failover.ts', '--mode', 'sync', '--before', '6', '--after', '8'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(output).toContain('0 lost, 0 duplicated, 0 phantom');
  expect(output).toMatch(/recovery from the kill .*api \d/);
  expect(code, output).toBe(0);
});
