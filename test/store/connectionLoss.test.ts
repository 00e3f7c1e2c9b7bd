import { afterAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { startFreezableProxy } from '../helpers/freezableProxy.ts';
import { createStore } from '../../src/store/index.ts';
import { sleep } from '../../src/internal/shutdown.ts';

/**
 * The database connection dies between two statements of a transaction (a restart, a failover,
 * a cut network). pg-pool listens for errors only on idle clients, so without the store's own
 * listener the client's 'error' event is an uncaught exception: the daemon would crash. Vitest
 * fails a run with an uncaught exception, so this test fails without the listener.
 */
const db = useTestDatabase('store_connection_loss');
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

describe('a connection lost inside a transaction', () => {
  test.each([
    ['unbounded (workers)', false],
    ['bounded (HTTP layer)', true],
  ])('%s: the transaction rejects, nothing is written, the broken connection is discarded and the next transaction works', async (_name, bounded) => {
    const proxy = await startFreezableProxy(db.connectionString);
    cleanup.push(() => proxy.close());
    const base = createStore({ connectionString: proxy.connectionString, max: 2 });
    cleanup.push(() => base.close());
    const store = bounded ? base.bounded({ connectMs: 3_000, queryMs: 5_000 }) : base;
    await store.query('CREATE TABLE IF NOT EXISTS connection_loss (label text)');

    const attempt = store.transaction(async (sql) => {
      await sql.query(`INSERT INTO connection_loss VALUES ('lost')`);
      proxy.down(); // the connection is cut while the transaction is open, between statements
      await sleep(200);
      proxy.up();
      await sql.query(`INSERT INTO connection_loss VALUES ('after')`);
    });
    await expect(attempt).rejects.toThrow();
    await sleep(100);
    await store.transaction((sql) => sql.query(`INSERT INTO connection_loss VALUES ('next')`));
    const { rows } = await db.store.query<{ label: string }>('SELECT label FROM connection_loss ORDER BY label');
    expect(rows.map((row) => row.label).filter((label) => label !== 'next')).toEqual([]);
    expect(rows.some((row) => row.label === 'next')).toBe(true);
    await db.store.query('DELETE FROM connection_loss');
  });
});
