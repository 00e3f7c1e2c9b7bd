import { expect, test } from 'vitest';
import { createStore, prepared } from '../../src/store/index.ts';
import { useTestDatabase } from '../helpers/db.ts';

// Prepared statements (store/index.ts `prepared`): planned once per connection, never mixing the
// values of concurrent calls, and surviving a table that changes shape under them.
const db = useTestDatabase('store_prepared');

/** How many statements this connection has prepared under `name`. */
const preparedHere = `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = $1`;

test('a prepared statement is prepared once per connection and reused, each call with its own values', async () => {
  const store = createStore({ connectionString: db.connectionString, max: 1 });
  try {
    const echo = prepared('SELECT $1::int AS value, pg_backend_pid() AS pid');
    expect(prepared('SELECT $1::int AS value, pg_backend_pid() AS pid')).toBe(echo);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => store.query<{ value: number; pid: number }>(echo, [index])));
    expect(answers.map((answer) => answer.rows[0]!.value)).toEqual(Array.from({ length: 20 }, (_, index) => index));
    expect(new Set(answers.map((answer) => answer.rows[0]!.pid)).size).toBe(1);
    const { rows } = await store.query<{ n: number }>(preparedHere, [echo.name]);
    expect(rows[0]!.n).toBe(1);
    // Inside a transaction too, on the same connection's statement.
    const inTransaction = await store.transaction((sql) => sql.query<{ value: number }>(echo, [41]));
    expect(inTransaction.rows[0]!.value).toBe(41);
    // A plain text is not prepared.
    await store.query('SELECT $1::int AS plain', [1]);
    const { rows: all } = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_prepared_statements`);
    expect(all[0]!.n).toBe(1);
  } finally {
    await store.close();
  }
});

test('a table that gains a column while a statement is prepared on it: the pool, a bounded view and a transaction all answer', async () => {
  await db.store.query('CREATE TABLE reshaped (id int PRIMARY KEY, label text)');
  await db.store.query(`INSERT INTO reshaped VALUES (1, 'one')`);
  const store = createStore({ connectionString: db.connectionString, max: 1 });
  const bounded = store.bounded({ connectMs: 2_000, queryMs: 2_000 });
  try {
    const read = prepared('SELECT * FROM reshaped WHERE id = $1');
    expect((await store.query(read, [1])).rows).toEqual([{ id: 1, label: 'one' }]);
    await db.store.query('ALTER TABLE reshaped ADD COLUMN extra int DEFAULT 7');
    // Without the retry on another connection this is "cached plan must not change result type", for good.
    expect((await store.query(read, [1])).rows).toEqual([{ id: 1, label: 'one', extra: 7 }]);
    await db.store.query('ALTER TABLE reshaped ADD COLUMN more int DEFAULT 8');
    expect((await bounded.query(read, [1])).rows).toEqual([{ id: 1, label: 'one', extra: 7, more: 8 }]);
    await db.store.query('ALTER TABLE reshaped ADD COLUMN most int DEFAULT 9');
    const inTransaction = await bounded.transaction((sql) => sql.query(read, [1]));
    expect(inTransaction.rows).toEqual([{ id: 1, label: 'one', extra: 7, more: 8, most: 9 }]);
  } finally {
    await store.close();
  }
});
