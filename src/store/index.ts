import pg from 'pg';
import { prepared, queryConfig, type PreparedStatement } from './prepared.ts';
import { copyOn } from './copy.ts';
import { lazyBegin } from './lazyBegin.ts';
import { submitQuery } from './pgQuery.ts';
import { CommitOutcomeUnknownError, DatabaseTimeoutError, isRetryableTransactionError, isStalePreparedStatement } from './errors.ts';

export { CommitOutcomeUnknownError, DatabaseTimeoutError, isDatabaseUnavailable, isUndefinedTable, isUniqueViolation } from './errors.ts';
// Prepared statements (prepared.ts) and COPY's text format (copy.ts) are the store's own seams;
// re-exported so every stage keeps importing the store from here.
export { prepared, statementText, type PreparedStatement } from './prepared.ts';
export { COPY_NULL, copyText } from './copy.ts';

/**
 * Postgres numeric(78,0) comes back as text; money is parsed into bigint by the code that
 * reads it. int8 (counts, block numbers) is parsed to bigint here so it can never silently
 * lose precision as a JS number.
 */
pg.types.setTypeParser(pg.types.builtins.INT8, (text) => BigInt(text));

/** Anything that runs SQL: the pool, or one client inside a transaction. */
export interface Sql {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(statement: string | PreparedStatement, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** The store and a store transaction: {@link Sql}, and bulk input through `COPY`. */
export interface SqlWithCopy extends Sql {
  /**
   * Runs `statement`, a `COPY table (columns) FROM STDIN`, with `rows` as its input (COPY's text
   * format: fields from {@link copyText}); resolves to the number of rows copied. For bulk writes:
   * Postgres then inserts without parsing arrays or planning (the EVM backfill, docs/benchmarks.md).
   */
  copyIn(statement: string, rows: string): Promise<number>;
}

/**
 * How long a caller waits for the database before giving up. Client-side timers: a frozen or
 * partitioned database never answers, so a server-side `statement_timeout` would never fire.
 */
export interface DatabaseLimits {
  /** Longest wait for a connection: a free one from the pool, or a new one being opened. */
  connectMs: number;
  /** Longest wait for the answer to one statement (BEGIN, a query, COMMIT each count once). */
  queryMs: number;
}

/** The database as the stages see it: one pool, one way to run a transaction. */
export interface Store extends SqlWithCopy {
  readonly pool: pg.Pool;
  /** The limits of this view, or `undefined` for the unbounded store the workers use. */
  readonly limits: DatabaseLimits | undefined;
  /**
   * Runs `work` in one transaction on one client, committing when it resolves and rolling back
   * when it throws. Serialization failures and deadlocks are retried (up to 5 times), which makes
   * SERIALIZABLE and lock-ordering mistakes cost a retry instead of an error.
   */
  transaction<T>(work: (sql: SqlWithCopy) => Promise<T>, options?: { isolation?: 'read committed' | 'repeatable read' | 'serializable' }): Promise<T>;
  /**
   * The same pool, with every wait bounded by `limits`: a wait that runs out throws
   * `DatabaseTimeoutError` (the HTTP layer answers 503) and a connection whose statement timed
   * out is discarded, never handed to the next caller. For the HTTP layer only: engine, ingest,
   * delivery and retention work keeps the unbounded store, so a long but healthy transaction
   * (a backfill commit, an engine batch waiting for its chain lock, a retention pass) is never
   * cut. Migrations use their own client and are not affected either.
   */
  bounded(limits: DatabaseLimits): Store;
  /** Ends the pool. A bounded view shares its parent's pool and does not end it. */
  close(): Promise<void>;
}

/**
 * Longest wait of the unbounded store (workers) for a pool connection or a new one. Without it,
 * a connection attempt to a frozen host waits forever and holds its pool slot; 10 s is far above
 * a healthy connect (milliseconds) and above the HTTP layer's own bounded waits, so workers do
 * not lose a busy pool's slots to API traffic before the API gives up.
 */
const POOL_CONNECTION_TIMEOUT_MS = 10_000;

/**
 * First TCP keepalive probe after this much silence: a database host that vanished without a
 * reset (power loss, partition) is then noticed by the kernel instead of never.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

export function createStore(params: { connectionString: string; max?: number; applicationName?: string; connectionTimeoutMs?: number }): Store {
  const pool = new pg.Pool({
    connectionString: params.connectionString,
    // 10 connections serve a 2-core host's API and workers; more only queues inside Postgres.
    max: params.max ?? 10,
    application_name: params.applicationName ?? 'svc-gateway',
    connectionTimeoutMillis: params.connectionTimeoutMs ?? POOL_CONNECTION_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return storeOn(pool, undefined, () => pool.end());
}

function storeOn(pool: pg.Pool, limits: DatabaseLimits | undefined, close: () => Promise<void>): Store {
  const connect = limits ? () => connectWithin(pool, limits.connectMs) : () => pool.connect();
  const onClient = (client: pg.PoolClient): SqlWithCopy => ({
    query: limits
      ? (statement, values) => queryWithin(client, statement, values, limits.queryMs)
      : (statement, values) => submitQuery(client, statement, values),
    copyIn: limits ? (statement, rows) => within(copyOn(client, statement, rows), limits.queryMs) : (statement, rows) => copyOn(client, statement, rows),
  });
  /** One COPY on a pool connection of its own; a connection whose COPY timed out is discarded. */
  const copyIn: SqlWithCopy['copyIn'] = async (statement, rows) => {
    const client = await connect();
    let broken: Error | undefined;
    const onError = (error: Error) => (broken = error);
    client.on('error', onError);
    try {
      return await onClient(client).copyIn(statement, rows);
    } catch (error) {
      if (error instanceof DatabaseTimeoutError) broken = error;
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  };
  return {
    pool,
    limits,
    query: limits
      ? againIfStale(async (statement, values) => {
          const client = await connect();
          let broken: Error | undefined;
          const onError = (error: Error) => (broken = error);
          client.on('error', onError);
          try {
            return await queryWithin(client, statement, values, limits.queryMs);
          } catch (error) {
            if (error instanceof DatabaseTimeoutError || isStalePreparedStatement(error)) broken = error as Error;
            throw error;
          } finally {
            client.off('error', onError);
            client.release(broken);
          }
        })
      : // pg-pool discards a client whose query failed, so the second try runs on a fresh connection.
        againIfStale((statement, values) => pool.query(queryConfig(statement, values))),
    copyIn,
    async transaction(work, options = {}) {
      const begin = `BEGIN ISOLATION LEVEL ${(options.isolation ?? 'read committed').toUpperCase()}`;
      for (let attempt = 1; ; attempt++) {
        const client = await connect();
        // The transaction's id, when a statement returned it ({@link XID_COLUMN}): COMMIT then needs no question before it.
        let knownXid: string | undefined;
        // BEGIN and the server limits go out with the first statement, in its message group (lazyBegin.ts).
        const opened = lazyBegin(client, onClient(client), limits ? [begin, ...serverLimits(limits.queryMs)] : [begin], (answer) =>
          limits ? within(answer, limits.queryMs) : answer,
        );
        const sql = withXidColumn(opened, (xid) => (knownXid = xid));
        let broken: Error | undefined;
        // pg-pool listens for errors only on idle clients: a connection lost between two
        // statements of this transaction would otherwise be an uncaught exception (a crash). The
        // next statement fails instead, and the broken connection is discarded on release.
        const onError = (error: Error) => (broken = error);
        client.on('error', onError);
        try {
          // Bounded work also asks the server to give up a little before the client does, so a
          // statement stuck on a lock is cancelled there (its locks freed, the connection reusable)
          // instead of running on after the request was answered.
          const result = await work(sql);
          // No statement was run, so no transaction was opened: nothing to commit.
          if (!opened.began()) return result;
          if (!limits) {
            await sql.query('COMMIT');
            return result;
          }
          // Which transaction this is, if it wrote anything: should COMMIT go unanswered, its
          // fate can be asked on another connection (a write-free transaction has nothing to lose).
          const { rows } = knownXid !== undefined ? { rows: [{ xid: knownXid }] } : await sql.query<{ xid: string | null }>(CURRENT_XID);
          try {
            await sql.query('COMMIT');
          } catch (error) {
            if (!(error instanceof DatabaseTimeoutError) || rows[0]?.xid == null) throw error;
            broken = error;
            const outcome = await commitOutcome(pool, limits, rows[0].xid);
            if (outcome === 'committed') return result;
            if (outcome === 'aborted') throw error; // nothing applied: a plain, retryable timeout
            throw new CommitOutcomeUnknownError('the database did not confirm the commit in time; the change may have been applied', { cause: error });
          }
          return result;
        } catch (error) {
          // A statement that timed out is still running on that connection: ROLLBACK would wait
          // behind it. The connection is discarded instead; Postgres rolls back when it closes.
          if (error instanceof DatabaseTimeoutError || error instanceof CommitOutcomeUnknownError) broken ??= error;
          else if (opened.began()) await sql.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
          // A stale prepared statement fails on this connection for good: the retry takes another.
          if (isStalePreparedStatement(error)) broken ??= error as Error;
          if ((isRetryableTransactionError(error) || isStalePreparedStatement(error)) && attempt < 5) continue;
          throw error;
        } finally {
          client.off('error', onError);
          client.release(broken);
        }
      }
    },
    bounded: (next) => storeOn(pool, next, async () => {}),
    close,
  };
}

/**
 * A column a write in a transaction may add to its RETURNING list (`RETURNING …, ${XID_COLUMN}`):
 * the transaction's id, which a bounded transaction needs before its COMMIT (to ask the fate of a
 * COMMIT that went unanswered). Given by the write itself, it spares the question before COMMIT,
 * a round trip per creation (docs/benchmarks.md, issue 28 goal 4). A top-level transaction's id
 * never changes once assigned, so any write's answer is the one COMMIT commits. The store removes
 * the column from the rows before the caller sees them.
 */
export const XID_COLUMN = `txid_current_if_assigned()::text AS svc_xid`;
const XID_FIELD = 'svc_xid';

/** `sql`, whose results lose the {@link XID_COLUMN} column, its value (once not null) handed to `found`. */
function withXidColumn(sql: SqlWithCopy, found: (xid: string) => void): SqlWithCopy {
  return {
    copyIn: sql.copyIn,
    async query(statement, values) {
      const result = await sql.query(statement, values);
      // A multi-statement text (BEGIN with its limits) answers with an array of results, no rows.
      const first = (result.rows as Record<string, unknown>[] | undefined)?.[0];
      if (first !== undefined && XID_FIELD in first) {
        const xid = first[XID_FIELD];
        for (const row of result.rows) delete row[XID_FIELD];
        if (typeof xid === 'string') found(xid);
      }
      return result as typeof result & pg.QueryResult<never>;
    },
  };
}

/** Asked before every bounded COMMIT unless a write gave it (prepared: one parse per connection, not per request). */
const CURRENT_XID = prepared('SELECT txid_current_if_assigned()::text AS xid');

/** `query`, run once more when it failed on a stale prepared statement (the failing connection was discarded). */
function againIfStale(query: Sql['query']): Sql['query'] {
  return async (statement, values) => {
    try {
      return await query(statement, values);
    } catch (error) {
      if (typeof statement === 'string' || !isStalePreparedStatement(error)) throw error;
      return query(statement, values);
    }
  };
}

/** `SET LOCAL` limits that make the server cancel a statement or lock wait just before the client's timer fires. */
function serverLimits(queryMs: number): string[] {
  const ms = Math.max(100, queryMs - Math.min(500, Math.floor(queryMs / 10)));
  return [`SET LOCAL statement_timeout = ${ms}`, `SET LOCAL lock_timeout = ${ms}`];
}

/**
 * Whether the transaction `xid`, whose COMMIT went unanswered, committed: asked on another
 * connection, a few times within about two statement limits (the COMMIT may still be in flight).
 * `aborted` and `unknown` both mean "not known to be committed".
 */
async function commitOutcome(pool: pg.Pool, limits: DatabaseLimits, xid: string): Promise<'committed' | 'aborted' | 'unknown'> {
  const deadline = Date.now() + 2 * limits.queryMs;
  while (Date.now() < deadline) {
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    try {
      client = await connectWithin(pool, Math.min(limits.connectMs, Math.max(1, deadline - Date.now())));
      const { rows } = await queryWithin<{ status: string | null }>(client, 'SELECT txid_status($1::bigint) AS status', [xid], limits.queryMs);
      if (rows[0]?.status === 'committed') return 'committed';
      if (rows[0]?.status === 'aborted') return 'aborted';
    } catch (error) {
      broken = error as Error;
    } finally {
      client?.release(broken);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return 'unknown';
}

/** `pool.connect()`, given up after `ms`; a connection that arrives later goes back to the pool. */
async function connectWithin(pool: pg.Pool, ms: number): Promise<pg.PoolClient> {
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const pending = pool.connect();
  try {
    return await Promise.race([
      pending,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(new DatabaseTimeoutError(`no database connection within ${ms} ms`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (late)
      pending.then(
        (client) => client.release(),
        () => {},
      );
  }
}

/** `work`, given up after `ms` (the caller then discards the connection it runs on). */
async function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  // The work may still fail after the timeout, when the discarded connection closes.
  work.catch(() => {});
  try {
    return await Promise.race([
      work,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new DatabaseTimeoutError(`the database did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** One statement on `client`, given up after `ms` (the caller then discards the connection). */
function queryWithin<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  statement: string | PreparedStatement,
  values: unknown[] | undefined,
  ms: number,
): Promise<pg.QueryResult<R>> {
  return within(submitQuery<R>(client, statement, values), ms);
}
