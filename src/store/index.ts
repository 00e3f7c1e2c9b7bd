import pg from 'pg';

/**
 * Postgres numeric(78,0) comes back as text; money is parsed into bigint by the code that
 * reads it. int8 (counts, block numbers) is parsed to bigint here so it can never silently
 * lose precision as a JS number.
 */
pg.types.setTypeParser(pg.types.builtins.INT8, (text) => BigInt(text));

/** Anything that runs SQL: the pool, or one client inside a transaction. */
export interface Sql {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** The database as the stages see it: one pool, one way to run a transaction. */
export interface Store extends Sql {
  readonly pool: pg.Pool;
  /**
   * Runs `work` in one transaction on one client, committing when it resolves and rolling back
   * when it throws. Serialization failures and deadlocks are retried (up to 5 times), which makes
   * SERIALIZABLE and lock-ordering mistakes cost a retry instead of an error.
   */
  transaction<T>(work: (sql: Sql) => Promise<T>, options?: { isolation?: 'read committed' | 'repeatable read' | 'serializable' }): Promise<T>;
  close(): Promise<void>;
}

/** SQLSTATEs that mean "the same transaction may succeed if run again". */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

export function createStore(params: { connectionString: string; max?: number; applicationName?: string }): Store {
  const pool = new pg.Pool({
    connectionString: params.connectionString,
    // 10 connections serve a 2-core host's API and workers; more only queues inside Postgres.
    max: params.max ?? 10,
    application_name: params.applicationName ?? 'svc-gateway',
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});

  return {
    pool,
    query: (text, values) => pool.query(text, values as unknown[]),
    async transaction(work, options = {}) {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        try {
          await client.query(`BEGIN ISOLATION LEVEL ${(options.isolation ?? 'read committed').toUpperCase()}`);
          const result = await work(client);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          const code = (error as { code?: string }).code;
          if (code && RETRYABLE_SQLSTATES.has(code) && attempt < 5) continue;
          throw error;
        } finally {
          client.release();
        }
      }
    },
    async close() {
      await pool.end();
    },
  };
}
