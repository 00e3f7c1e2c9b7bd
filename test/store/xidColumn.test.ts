import pg from 'pg';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { statementText, XID_COLUMN } from '../../src/store/index.ts';

/**
 * A bounded transaction needs its id before COMMIT (to ask the fate of a COMMIT that goes
 * unanswered, test/api/commitTimeout.test.ts). A write that returns it ({@link XID_COLUMN})
 * spares the separate question, a round trip per session creation; the column never reaches the
 * caller's rows.
 */
const db = useTestDatabase('store_xid_column');
const ASK_XID = 'SELECT txid_current_if_assigned()::text AS xid';

afterEach(() => vi.restoreAllMocks());

/** Runs `work` in a bounded transaction, returning its result and the texts of what was sent. */
async function recorded<T>(work: (sql: pg.ClientBase & never) => Promise<T>, store = db.store.bounded({ connectMs: 5_000, queryMs: 5_000 })) {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text: string; name?: string };
    sent.push(typeof config === 'string' ? config : statementText(config as { text: string; name: string }));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as never);
  const result = await store.transaction(work as never);
  return { result: result as T, sent };
}

describe('the transaction id given by a write', () => {
  test('is not asked again before COMMIT, and is taken out of the rows', async () => {
    await db.store.query('CREATE TABLE IF NOT EXISTS xid_probe (id serial PRIMARY KEY, note text)');
    const { result, sent } = await recorded(async (sql: { query: (text: string, values?: unknown[]) => Promise<pg.QueryResult> }) => {
      const { rows } = await sql.query(`INSERT INTO xid_probe (note) VALUES ($1) RETURNING id, note, ${XID_COLUMN}`, ['a']);
      return rows;
    });
    expect(result).toEqual([{ id: expect.any(Number), note: 'a' }]);
    expect(sent.filter((text) => text === ASK_XID)).toEqual([]);
    expect(sent.at(-1)).toBe('COMMIT');
    expect((await db.store.query("SELECT count(*)::int AS n FROM xid_probe WHERE note = 'a'")).rows[0]?.n).toBe(1);
  });

  test('without it, the store asks before COMMIT as before', async () => {
    await db.store.query('CREATE TABLE IF NOT EXISTS xid_probe (id serial PRIMARY KEY, note text)');
    const { sent } = await recorded(async (sql: { query: (text: string, values?: unknown[]) => Promise<pg.QueryResult> }) => {
      await sql.query('INSERT INTO xid_probe (note) VALUES ($1) RETURNING id', ['b']);
    });
    expect(sent.filter((text) => text === ASK_XID)).toHaveLength(1);
  });

  test('an unbounded transaction also takes the column out of the rows', async () => {
    await db.store.query('CREATE TABLE IF NOT EXISTS xid_probe (id serial PRIMARY KEY, note text)');
    const rows = await db.store.transaction(async (sql) => (await sql.query(`INSERT INTO xid_probe (note) VALUES ('c') RETURNING note, ${XID_COLUMN}`)).rows);
    expect(rows).toEqual([{ note: 'c' }]);
  });
});
