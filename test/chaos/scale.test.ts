import { expect, test } from 'vitest';
import { runChaosScript } from '../helpers/chaosScript.ts';
import { useTestDatabase } from '../helpers/db.ts';

// The short version of bench/chaos/scale.ts (docs/reliability.md "Chaos at scale"): the same fleet
// (api, two ingest, worker processes), flaky RPC with an outage, a receiver outage and SIGKILLs
// across the roles, with the same audit; 600 payments and up to 4 kills instead of 10,000 and 50.
const db = useTestDatabase('chaos_scale');

test('payments under SIGKILLs, a flaky RPC and a receiver outage: none lost or duplicated, every event delivered under its id', {
  timeout: 300_000,
}, async () => {
  const args = ['--size', '600', '--kills', '4', '--receiver-outage', '5', '--rpc-outages', '1'];
  const { code, output } = await runChaosScript('scale.ts', args, db.connectionString);
  expect({ code, tail: output.split('\n').slice(-12).join('\n') }).toMatchObject({ code: 0 });
  expect(output).toMatch(/^PASS$/m);
  expect(output).toMatch(/0 lost, 0 duplicated, 0 phantom/);
  // At least one role killed mid-run. The run waits for a killed role to be back before the next
  // kill, and stops killing when the payments end: with the whole suite beside it, 1 of 4 kills fit
  // in the 10 s of payments (the audit held).
  expect(output).toMatch(/SIGKILLs [1-9]\d* \(/);
});
