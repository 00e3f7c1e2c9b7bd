import type pg from 'pg';
import { queryConfig, type PreparedStatement } from './prepared.ts';
import { StoreQuery, type PgConnection } from './pgQuery.ts';
import type { SqlWithCopy } from './index.ts';

/**
 * A statement sent in one message group with the statements before it (BEGIN and its SET LOCALs):
 * Parse/Bind/Execute of each, then the statement's own, then one Sync. One socket write and one
 * backend wake-up instead of two (a round trip was a large part of a creation's CPU, issue 28). An
 * error in any of them makes Postgres skip the rest up to the Sync, so the statement never runs
 * outside the transaction its BEGIN opens. The prefix's answers (CommandComplete) are dropped;
 * the statement's result is what the caller gets, as from `client.query`. The prefix must return
 * no rows (no Describe is sent for it). Reviewed: docs/architecture.md, "BEGIN with the first statement".
 */
class PrefixedQuery extends StoreQuery {
  readonly #prefix: readonly string[];
  #unanswered: number;

  constructor(config: object, prefix: readonly string[]) {
    super(config);
    this.#prefix = prefix;
    this.#unanswered = prefix.length;
  }

  /** Always the extended protocol: the group ends with one Sync. */
  requiresPreparation(): boolean {
    return true;
  }

  override prepare(connection: PgConnection): void {
    for (const text of this.#prefix) {
      connection.parse({ text, name: '', types: [] });
      connection.bind({ portal: '', statement: '', values: [] });
      connection.execute({ portal: '', rows: 0 });
    }
    super.prepare(connection);
  }

  override handleCommandComplete(message: unknown, connection: PgConnection): void {
    if (this.#unanswered > 0) {
      this.#unanswered--;
      return;
    }
    super.handleCommandComplete(message, connection);
  }
}

/** Why a first statement sent with BEGIN was answered outside a transaction. */
export const NOT_OPENED = 'the first statement of a transaction was answered outside it: BEGIN was not sent with it (pg internals, src/store/pgQuery.ts)';

/**
 * Whether `statement` can follow the prefix in one group: a prepared statement this connection
 * has already parsed (pg marks a name parsed at the first ParseComplete of the group, so a
 * statement parsed in the group itself would be marked before its own Parse succeeded), or a
 * text with values (already the extended protocol, so one statement). A text without values may
 * hold several statements, which the extended protocol refuses.
 */
function joinable(client: pg.PoolClient, statement: string | PreparedStatement, values: unknown[] | undefined): boolean {
  if (typeof statement === 'string') return values !== undefined;
  const connection = (client as unknown as { connection: PgConnection }).connection;
  return connection.parsedStatements[statement.name] !== undefined;
}

/**
 * `base`, a transaction's statements on `client`, with its opening statements (`prefix`: BEGIN and
 * the server limits) sent only with the first statement `work` runs, in the same message group
 * when it can be ({@link PrefixedQuery}); `wait` bounds that first answer as `base` bounds each of
 * its own. `began()` says whether anything was sent: a transaction that ran no statement has no
 * COMMIT or ROLLBACK to send.
 *
 * Statements issued while the first is in flight are handed to the connection after its answer,
 * in the order they were issued, and so is every statement issued while any of those is still
 * waiting. Without that order a statement issued together with a failing first one (a
 * `Promise.all`) was handed over after the caller's ROLLBACK, which the rejection sent first:
 * it ran, and committed, on its own outside the transaction, or on the connection once back in
 * the pool (test/store/lazyBegin.test.ts).
 */
export function lazyBegin(
  client: pg.PoolClient,
  base: SqlWithCopy,
  prefix: readonly string[],
  wait: <T>(work: Promise<T>) => Promise<T>,
): SqlWithCopy & { began(): boolean } {
  let opening: Promise<unknown> | undefined;
  let opened = false;
  /** Settles once every statement issued so far has been handed to the connection. */
  let handedOver: Promise<unknown> = Promise.resolve();
  /** Statements issued, not yet handed to the connection (waiting on the first one's answer). */
  let waiting = 0;
  const open = <T>(first: () => Promise<T>): Promise<T> => {
    const answer = first();
    opening = answer.finally(() => (opened = true)).catch(() => {});
    handedOver = opening;
    return answer;
  };
  /** `send` after the first answer and after every statement issued before it was handed over. */
  const inTurn = <T>(send: () => Promise<T>): Promise<T> => {
    waiting++;
    // `send` hands its statement to pg's queue synchronously; the turn passes on right after that.
    const sent = handedOver.then(() => {
      waiting--;
      return { answer: send() };
    });
    // A statement pg refused on the spot (thrown, not answered) fails alone; the turn passes on.
    handedOver = sent.catch(() => {});
    return sent.then(({ answer }) => answer);
  };
  return {
    began: () => opening !== undefined,
    query<R extends pg.QueryResultRow>(statement: string | PreparedStatement, values?: unknown[]): Promise<pg.QueryResult<R>> {
      if (opened && waiting === 0) return base.query<R>(statement, values);
      if (opening) return inTurn(() => base.query<R>(statement, values));
      if (!joinable(client, statement, values)) {
        return open(async () => {
          await base.query(prefix.join('; '));
          return base.query<R>(statement, values);
        });
      }
      return open(() =>
        wait(
          new Promise<pg.QueryResult<R>>((resolve, reject) => {
            const callback = (error: Error | null, result: pg.QueryResult) => {
              if (error) reject(error);
              // Answered and not inside a transaction: the prefix was not sent with it (pg's
              // internals moved, pgQuery.ts). Loud, so the transaction fails instead of running on
              // statement by statement in autocommit.
              else if (client.getTransactionStatus() !== 'T') reject(new Error(NOT_OPENED));
              else resolve(result as pg.QueryResult<R>);
            };
            client.query(new PrefixedQuery({ ...queryConfig(statement, values), callback }, prefix) as unknown as pg.QueryConfig);
          }),
        ),
      );
    },
    copyIn(statement, rows) {
      if (opened && waiting === 0) return base.copyIn(statement, rows);
      if (opening) return inTurn(() => base.copyIn(statement, rows));
      return open(async () => {
        await base.query(prefix.join('; '));
        return base.copyIn(statement, rows);
      });
    },
  };
}
