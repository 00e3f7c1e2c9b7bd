import { expect, test } from 'vitest';
import { runChaosScript } from '../helpers/chaosScript.ts';
import { useTestDatabase } from '../helpers/db.ts';

// The short version of bench/chaos/reorgs.ts (docs/reliability.md "Reorgs"): the same fleet
// (api, ingest, worker processes), payments and audit, 12 reorgs instead of 1,000. The run is a
// script with its own processes, so it runs as one, on this test's database.
const db = useTestDatabase('chaos_reorgs');

test('random reorgs during live payments: each counted once, the deep ones alerted, every session exact to the base unit', { timeout: 240_000 }, async () => {
  const { code, output } = await runChaosScript('reorgs.ts', ['--size', '12'], db.connectionString);
  expect({ code, tail: output.split('\n').slice(-12).join('\n') }).toMatchObject({ code: 0 });
  expect(output).toMatch(/^PASS$/m);
  const [, made, counted] = output.match(/reorgs: (\d+) .*\n.*ingester: (\d+) reorgs counted/) ?? [];
  expect(Number(made)).toBe(12);
  expect(Number(counted)).toBe(12);
  expect(output).toMatch(/0 lost, 0 duplicated, 0 phantom/);
});
