import { expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newEvmWallet, newMerchant } from '../helpers/engine.ts';
import { createSession, listSessions } from '../../src/payments/sessions.ts';
import * as sessionSql from '../../src/payments/sessionSql.ts';

/**
 * The metadata search index holds only sessions that have metadata (migration 056, issue 28 goal
 * 4): a creation without metadata writes no GIN entry, and the search still finds by index.
 */
const db = useTestDatabase('payments_metadata_index');

test('a session without metadata is not in the search index; the search uses it and still finds by value', async () => {
  const merchantId = await newMerchant(db.store);
  const wallet = newEvmWallet();
  const params = {
    merchantId,
    livemode: false,
    amount: '3',
    currency: 'USDC' as const,
    chain: 'polygon' as const,
    merchantWallet: wallet,
    monitorWindowSeconds: 3600,
  };
  const plain = await createSession(db.store, params);
  const tagged = await createSession(db.store, { ...params, metadata: { order: 'A-1001' } });

  // The index's predicate leaves out the empty object.
  const { rows: index } = await db.store.query<{ def: string }>("SELECT indexdef AS def FROM pg_indexes WHERE indexname = 'payment_sessions_metadata_present'");
  expect(index[0]?.def).toMatch(/USING gin \(metadata\) WHERE \(metadata <> '\{\}'::jsonb\)/);
  const { rows: old } = await db.store.query("SELECT 1 FROM pg_indexes WHERE indexname = 'payment_sessions_metadata'");
  expect(old).toEqual([]);

  const filter = { merchantId, livemode: false, statuses: null, createdGte: null, createdLt: null, limit: 10 };
  expect((await listSessions(db.store, { ...filter, search: 'A-1001' })).map((s) => s.id)).toEqual([tagged.id]);
  expect((await listSessions(db.store, { ...filter, search: plain.id })).map((s) => s.id)).toEqual([plain.id]);
  expect(await listSessions(db.store, { ...filter, search: 'A-100' })).toEqual([]);

  // The search's metadata lookup says what the index's predicate says, so the planner can take
  // the partial index (sequential scans priced out, as on a table too large to scan; on this tiny
  // table the merchant's btree wins otherwise). Without it the index is unusable.
  const search = sessionSql.listSessions({ search: true });
  expect(search).toContain("m.metadata <> '{}'::jsonb");
  const lookup = (extra: string) =>
    db.store.transaction(async (sql) => {
      await sql.query('SET LOCAL enable_seqscan = off');
      const { rows } = await sql.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT m.id FROM payment_sessions m WHERE m.metadata @? '$.* ? (@ == "A-1001")'::jsonpath ${extra}`,
      );
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    });
  expect(await lookup("AND m.metadata <> '{}'::jsonb")).toContain('payment_sessions_metadata_present');
  expect(await lookup('')).not.toContain('payment_sessions_metadata_present');
});
