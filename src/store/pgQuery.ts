import pg from 'pg';
import { queryConfig, type PreparedStatement } from './prepared.ts';

/**
 * What the store uses of pg's connection (not in its types): the statements it has parsed, and
 * the protocol writers.
 */
export interface PgConnection {
  parsedStatements: Record<string, string | undefined>;
  parse(config: { text: string; name: string; types: unknown[] }): void;
  bind(config: { portal: string; statement: string; values: unknown[] }): void;
  execute(config: { portal: string; rows: number }): void;
}

/** What the store's query classes use of pg 8's Query (not in its types). */
interface PgQueryInternals {
  readonly name?: string;
  prepare(connection: PgConnection): void;
  handleError(error: Error, connection: PgConnection): void;
  handleCommandComplete(message: unknown, connection: PgConnection): void;
  handleReadyForQuery(connection: PgConnection): void;
}

/** pg's Query, which {@link StoreQuery} and lazyBegin.ts's PrefixedQuery extend. */
const PgQuery = (pg as unknown as { Query: new (config: object) => PgQueryInternals }).Query;

// pg's internals these classes rely on (pg 8): fail at startup, not in a transaction, if they moved.
for (const method of ['prepare', 'handleError', 'handleCommandComplete', 'handleReadyForQuery', 'requiresPreparation'] as const) {
  if (typeof (PgQuery?.prototype as unknown as Record<string, unknown> | undefined)?.[method] !== 'function') {
    throw new Error(`pg's Query has no ${method}(): src/store/pgQuery.ts and lazyBegin.ts rely on pg 8's internals (docs/architecture.md)`);
  }
}

/**
 * pg's Query, less one defect of pg 8: when binding a prepared statement's values fails in the
 * client (a value pg cannot serialize, such as a BigInt inside a JSON value), pg sends Close for
 * the statement and fails the query, yet keeps the name marked parsed on the connection, so every
 * later use of that statement on it (a pooled connection, kept) failed with "prepared statement
 * … does not exist". An error raised while this query writes its messages is that case: the name
 * is forgotten once the server has answered the group (a ParseComplete in it, such as lazyBegin's
 * BEGIN's, marks the name parsed again), and the next use parses it again.
 */
export class StoreQuery extends PgQuery {
  #writing = false;
  #closed = false;

  override prepare(connection: PgConnection): void {
    this.#writing = true;
    try {
      super.prepare(connection);
    } finally {
      this.#writing = false;
    }
  }

  override handleError(error: Error, connection: PgConnection): void {
    if (this.#writing && this.name) this.#closed = true;
    super.handleError(error, connection);
  }

  override handleReadyForQuery(connection: PgConnection): void {
    if (this.#closed && this.name) delete connection.parsedStatements[this.name];
    super.handleReadyForQuery(connection);
  }
}

/** `statement` on `client`, as `client.query` runs it; a prepared one through {@link StoreQuery}. */
export function submitQuery<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  statement: string | PreparedStatement,
  values: unknown[] | undefined,
): Promise<pg.QueryResult<R>> {
  if (typeof statement === 'string') return client.query<R>(queryConfig(statement, values));
  return new Promise((resolve, reject) => {
    const callback = (error: Error | null, result: pg.QueryResult<R>) => (error ? reject(error) : resolve(result));
    client.query(new StoreQuery({ ...queryConfig(statement, values), callback }) as unknown as pg.QueryConfig);
  });
}
