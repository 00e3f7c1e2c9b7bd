import { beforeAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { COPY_NULL, copyText } from '../../src/store/index.ts';

const db = useTestDatabase('store_copy_in');

beforeAll(async () => {
  await db.store.query('CREATE TABLE copied (id integer PRIMARY KEY, label text, amount numeric(78, 0))');
});

const COPY = 'COPY copied (id, label, amount) FROM STDIN';
const row = (id: number, label: string | null, amount: bigint) => `${id}\t${label === null ? COPY_NULL : copyText(label)}\t${amount}\n`;

async function stored(ids: number[]) {
  const { rows } = await db.store.query<{ id: number; label: string | null; amount: string }>(
    'SELECT id, label, amount::text FROM copied WHERE id = ANY($1::int[]) ORDER BY id',
    [ids],
  );
  return rows;
}

test('values holding the format’s own characters arrive exactly as sent; NULL stays NULL', async () => {
  // A hostile RPC answer may put a tab, newline or backslash in a string: each stays inside its field.
  const labels = ['plain 0xabc', 'tab\there', 'line\nbreak', 'carriage\rreturn', 'back\\slash \\N \\t', '\\N'];
  const text = labels.map((label, i) => row(i + 1, label, 10n ** 70n + BigInt(i))).join('') + row(7, null, 1n);
  const copied = await db.store.transaction((sql) => sql.copyIn(COPY, text));
  expect(copied).toBe(7);
  expect(await stored([1, 2, 3, 4, 5, 6, 7])).toEqual([
    ...labels.map((label, i) => ({ id: i + 1, label, amount: (10n ** 70n + BigInt(i)).toString() })),
    { id: 7, label: null, amount: '1' },
  ]);
});

test('a failing COPY rejects and writes nothing; the transaction goes on from its savepoint', async () => {
  const result = await db.store.transaction(async (sql) => {
    await sql.query('SAVEPOINT copy');
    // Row 11 repeats the primary key of row 10.
    const failed = await sql.copyIn(COPY, row(10, 'a', 1n) + row(10, 'b', 2n)).catch((error: unknown) => error);
    await sql.query('ROLLBACK TO SAVEPOINT copy');
    await sql.copyIn(COPY, row(12, 'after', 3n));
    return failed;
  });
  expect((result as { code?: string }).code).toBe('23505');
  expect(await stored([10, 12])).toEqual([{ id: 12, label: 'after', amount: '3' }]);
});

test('the store and its bounded view copy on a connection of their own', async () => {
  expect(await db.store.copyIn(COPY, row(20, 'pool', 4n))).toBe(1);
  expect(await db.store.bounded({ connectMs: 5_000, queryMs: 5_000 }).copyIn(COPY, row(21, 'bounded', 5n))).toBe(1);
  expect(await stored([20, 21])).toEqual([
    { id: 20, label: 'pool', amount: '4' },
    { id: 21, label: 'bounded', amount: '5' },
  ]);
});
