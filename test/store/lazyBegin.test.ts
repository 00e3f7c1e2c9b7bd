import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { createRequire } from 'node:module';
import { createStore, prepared, type PreparedStatement, type Store } from '../../src/store/index.ts';
import { lazyBegin, NOT_OPENED } from '../../src/store/lazyBegin.ts';
import { queryConfig } from '../../src/store/prepared.ts';

/**
 * A transaction's BEGIN (and a bounded one's SET LOCAL limits) goes out with its first statement,
 * in one message group, when that statement is already prepared on the connection (issue 28
 * goal 4: a round trip fewer per transaction). The statement still runs inside the transaction,
 * with its isolation level and limits, an error in it still rolls everything back, and a
 * transaction that runs nothing sends nothing.
 */
const db = useTestDatabase('store_lazy_begin');
let store: Store;
/** Answers (ReadyForQuery) received on the store's one connection: one per round trip. */
let answers = 0;

const SETTINGS = prepared(
  "SELECT current_setting('transaction_isolation') AS isolation, current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout",
);
const INSERT = prepared('INSERT INTO lazy_begin_probe (note) VALUES ($1)');

beforeAll(async () => {
  await db.store.query('CREATE TABLE lazy_begin_probe (id serial PRIMARY KEY, note text NOT NULL)');
  // One connection, so every transaction below finds the statements it prepared before.
  store = createStore({ connectionString: db.connectionString, max: 1 });
  store.pool.on('connect', (client) => {
    (client as unknown as { connection: { on(event: string, listener: () => void): void } }).connection.on('readyForQuery', () => answers++);
  });
  await store.query(SETTINGS);
  await store.query(INSERT, ['warm-up']);
});
afterAll(() => store.close());

/** `client`'s statements as the store's `Sql`, for lazyBegin alone. */
function onClient(client: pg.PoolClient) {
  return {
    query: (statement: PreparedStatement, values?: unknown[]) => client.query(queryConfig(statement, values)),
    copyIn: () => Promise.reject(new Error('unused')),
  };
}

/** Round trips of `work`'s transaction on the store's one connection. */
async function roundTrips<T>(work: () => Promise<T>): Promise<{ result: T; trips: number }> {
  const before = answers;
  const result = await work();
  return { result, trips: answers - before };
}

describe('BEGIN with the first statement', () => {
  test('a prepared first statement shares the round trip of BEGIN: two round trips with COMMIT instead of three', async () => {
    const { result, trips } = await roundTrips(() => store.transaction(async (sql) => (await sql.query(SETTINGS)).rows[0]));
    expect(result).toEqual({ isolation: 'read committed', statement_timeout: '0', lock_timeout: '0' });
    expect(trips).toBe(2);
  });

  test('the first statement runs inside the transaction, at its isolation level and, bounded, under its server limits', async () => {
    const bounded = store.bounded({ connectMs: 5_000, queryMs: 5_000 });
    const { rows } = await bounded.transaction((sql) => sql.query(SETTINGS), { isolation: 'serializable' });
    expect(rows[0]).toEqual({ isolation: 'serializable', statement_timeout: '4500ms', lock_timeout: '4500ms' });
  });

  test('an error after the first statement rolls it back', async () => {
    await expect(
      store.transaction(async (sql) => {
        await sql.query(INSERT, ['rolled back']);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect((await db.store.query("SELECT count(*)::int AS n FROM lazy_begin_probe WHERE note = 'rolled back'")).rows[0]).toEqual({ n: 0 });
    // The connection is clean: the next transaction commits.
    await store.transaction((sql) => sql.query(INSERT, ['committed']));
    expect((await db.store.query("SELECT count(*)::int AS n FROM lazy_begin_probe WHERE note = 'committed'")).rows[0]).toEqual({ n: 1 });
  });

  test('a failing first statement leaves nothing and the connection usable', async () => {
    await expect(store.transaction((sql) => sql.query(INSERT, [null]))).rejects.toThrow(/null value/);
    const { rows } = await store.transaction((sql) => sql.query<{ isolation: string }>(SETTINGS));
    expect(rows[0]?.isolation).toBe('read committed');
  });

  test('a transaction that runs no statement sends nothing', async () => {
    const { result, trips } = await roundTrips(() => store.transaction(async () => 'nothing'));
    expect(result).toBe('nothing');
    expect(trips).toBe(0);
  });

  test('a text of several statements, or a statement not yet prepared here, still runs after a BEGIN of its own', async () => {
    const { result, trips } = await roundTrips(() =>
      store.transaction(async (sql) => {
        await sql.query("INSERT INTO lazy_begin_probe (note) VALUES ('multi'); INSERT INTO lazy_begin_probe (note) VALUES ('multi')");
        return (await sql.query<{ n: number }>(prepared("SELECT count(*)::int AS n FROM lazy_begin_probe WHERE note = 'multi'"))).rows[0];
      }),
    );
    expect(result).toEqual({ n: 2 });
    expect(trips).toBe(4);
    const fresh = prepared("SELECT 'fresh' AS word");
    const { rows } = await store.transaction((sql) => sql.query<{ word: string }>(fresh));
    expect(rows).toEqual([{ word: 'fresh' }]);
  });

  test('statements sent together with the first one run after it, in order', async () => {
    const rows = await store.transaction(async (sql) => {
      const [first, second] = await Promise.all([sql.query(INSERT, ['ordered 1']), sql.query(INSERT, ['ordered 2'])]);
      expect([first.rowCount, second.rowCount]).toEqual([1, 1]);
      return (await sql.query<{ note: string }>("SELECT note FROM lazy_begin_probe WHERE note LIKE 'ordered%' ORDER BY id")).rows;
    });
    expect(rows.map((row: pg.QueryResultRow) => row.note)).toEqual(['ordered 1', 'ordered 2']);
  });
  test('when the first statement fails, a statement sent with it never runs outside the transaction (nor after it, on a released connection)', async () => {
    // Issued together with a failing first statement: it must be answered inside the (aborted)
    // transaction, before its ROLLBACK, not written after the ROLLBACK, where it would commit on
    // its own, or onto the connection once it is back in the pool.
    let orphan: Promise<unknown> | undefined;
    await expect(
      store.transaction(async (sql) => {
        const first = sql.query(INSERT, [null]);
        orphan = sql.query(INSERT, ['orphan']);
        orphan.catch(() => {});
        await Promise.all([first, orphan]);
      }),
    ).rejects.toThrow(/null value/);
    await expect(orphan).rejects.toThrow(/current transaction is aborted/);
    await store.transaction((sql) => sql.query(SETTINGS));
    expect((await db.store.query("SELECT count(*)::int AS n FROM lazy_begin_probe WHERE note = 'orphan'")).rows[0]).toEqual({ n: 0 });
  });
  test('a value pg cannot send (a BigInt in JSON) fails its statement and leaves the prepared statement usable on the connection', async () => {
    // pg closes a prepared statement when binding its values fails in the client, yet kept it
    // marked parsed: each later use on that (pooled) connection failed with "does not exist".
    const JSON_NOTE = prepared('INSERT INTO lazy_begin_probe (note) VALUES ($1::jsonb #>> $2::text[])');
    await store.transaction((sql) => sql.query(JSON_NOTE, [{ v: 'json warm-up' }, ['v']]));
    // As the transaction's first statement (sent with BEGIN), then as a later one, then bounded.
    await expect(store.transaction((sql) => sql.query(JSON_NOTE, [{ v: 1n }, ['v']]))).rejects.toThrow(/BigInt/);
    await store.transaction((sql) => sql.query(JSON_NOTE, [{ v: 'json after the first' }, ['v']]));
    await expect(
      store.transaction(async (sql) => {
        await sql.query(SETTINGS);
        await sql.query(JSON_NOTE, [{ v: 1n }, ['v']]);
      }),
    ).rejects.toThrow(/BigInt/);
    await store.transaction(async (sql) => {
      await sql.query(SETTINGS);
      await sql.query(JSON_NOTE, [{ v: 'json after a later one' }, ['v']]);
    });
    const bounded = store.bounded({ connectMs: 5_000, queryMs: 5_000 });
    await expect(bounded.query(JSON_NOTE, [{ v: 1n }, ['v']])).rejects.toThrow(/BigInt/);
    await bounded.query(JSON_NOTE, [{ v: 'json after a bounded one' }, ['v']]);
    const { rows } = await db.store.query<{ note: string }>("SELECT note FROM lazy_begin_probe WHERE note LIKE 'json after%' ORDER BY id");
    expect(rows.map((row) => row.note)).toEqual(['json after the first', 'json after a later one', 'json after a bounded one']);
  });

  test('fails loudly when pg did not send the prefix with the first statement (what an upgrade that moves its internals would do)', async () => {
    // A prefix that opens no transaction stands for pg no longer writing it: the statement is
    // answered outside a transaction, and lazyBegin refuses the answer instead of going on.
    const client = await store.pool.connect();
    const base = onClient(client);
    try {
      await expect(lazyBegin(client, base, ['SET LOCAL lock_timeout = 0'], (answer) => answer).query(SETTINGS)).rejects.toThrow(NOT_OPENED);
      // The same first statement after a real BEGIN is answered inside the transaction.
      expect((await lazyBegin(client, base, ['BEGIN'], (answer) => answer).query(SETTINGS)).rows[0]).toMatchObject({ isolation: 'read committed' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  test('a failing BEGIN leaves the statement sent with it unrun', async () => {
    const client = await store.pool.connect();
    const base = onClient(client);
    try {
      const sql = lazyBegin(client, base, ['BEGIN ISOLATION LEVEL sometimes'], (answer) => answer);
      await expect(sql.query(INSERT, ['after a failed BEGIN'])).rejects.toThrow(/syntax error/);
      expect(client.getTransactionStatus()).toBe('I');
    } finally {
      client.release();
    }
    expect((await db.store.query("SELECT count(*)::int AS n FROM lazy_begin_probe WHERE note = 'after a failed BEGIN'")).rows[0]).toEqual({ n: 0 });
  });

  test('pins the pg major version whose internals lazyBegin.ts and pgQuery.ts use', () => {
    // On a major upgrade of pg, review PrefixedQuery and StoreQuery against its Query and Client
    // (docs/architecture.md, "BEGIN with the first statement"), then move this pin.
    expect(createRequire(import.meta.url)('pg/package.json').version).toMatch(/^8\./);
  });
});
