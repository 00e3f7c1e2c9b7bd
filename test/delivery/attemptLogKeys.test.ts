import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';

/**
 * The attempt log keeps no foreign keys (migration 058, issue 28 goal 5): each was a row lock of
 * its delivery, event and endpoint at every attempt's insert. The deliveries keep theirs.
 */
const db = useTestDatabase('delivery_attempt_log_keys');

test('webhook_attempts has no foreign key; webhook_deliveries keeps its three', async () => {
  const keys = async (table: string) =>
    (
      await db.store.query<{ name: string }>(`SELECT conname AS name FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname`, [
        table,
      ])
    ).rows.map((row) => row.name);
  expect(await keys('webhook_attempts')).toEqual([]);
  expect(await keys('webhook_deliveries')).toEqual([
    'webhook_deliveries_endpoint_id_fkey',
    'webhook_deliveries_event_id_fkey',
    'webhook_deliveries_merchant_id_fkey',
  ]);
});
