import { statementText, type PreparedStatement, type SqlWithCopy, type Store } from '../src/store/index.ts';

/** A statement as the code sent it, with the time it took (the first values it was sent with are kept). */
export interface Recorded {
  /** The statement and its filter shape: what identifies it across the two phases. */
  key: string;
  text: string;
  values: unknown[] | undefined;
  calls: number;
  totalMs: number;
}

/**
 * Records every statement sent through a store (the pool, its transactions and its bounded
 * views: what the API and the engine send), so bench/scale.ts can show the costliest ones on the
 * filled database and `EXPLAIN` each with the values it was really sent with.
 */
export function createStatementRecorder() {
  const statements = new Map<string, Recorded>();
  let enabled = false;
  const note = (text: string, values: unknown[] | undefined, ms: number) => {
    if (!enabled) return;
    // One entry per statement and filter shape: which values are null, and arrays (status lists)
    // as sent, so each filter of a list is explained with its own plan; ids and amounts merge.
    const shape = (values ?? [])
      .map((value) =>
        value === null
          ? 'null'
          : Array.isArray(value) && value.length <= 4 && value.every((item) => typeof item === 'string')
            ? JSON.stringify(value)
            : typeof value,
      )
      .join(',');
    const key = `${text}|${shape}`;
    const entry = statements.get(key);
    if (entry) {
      entry.calls += 1;
      entry.totalMs += ms;
    } else statements.set(key, { key, text, values, calls: 1, totalMs: ms });
  };
  const wrapSql = (sql: SqlWithCopy): SqlWithCopy => ({
    async query(statement: string | PreparedStatement, values?: unknown[]) {
      const text = statementText(statement);
      const started = performance.now();
      try {
        return await sql.query(statement, values);
      } finally {
        note(text, values, performance.now() - started);
      }
    },
    copyIn: (statement, rows) => sql.copyIn(statement, rows),
  });
  const wrap = (store: Store): Store => ({
    pool: store.pool,
    limits: store.limits,
    query: wrapSql(store).query as Store['query'],
    copyIn: (statement, rows) => store.copyIn(statement, rows),
    transaction: (work, options) => store.transaction((sql) => work(wrapSql(sql)), options),
    bounded: (limits) => wrap(store.bounded(limits)),
    close: () => store.close(),
  });
  return {
    wrap,
    /** Starts a new recording (drops the previous one). */
    start() {
      statements.clear();
      enabled = true;
    },
    stop() {
      enabled = false;
      return [...statements.values()].filter((entry) => !/^\s*(BEGIN|SET|COMMIT|ROLLBACK|SELECT txid_current_if_assigned)/i.test(entry.text));
    },
  };
}

/** The statements of a recording, costliest first (time per call), one line each. */
export function formatStatements(recorded: Recorded[], top = 15): string[] {
  return [...recorded]
    .sort((a, b) => b.totalMs / b.calls - a.totalMs / a.calls)
    .slice(0, top)
    .map((entry) => `${(entry.totalMs / entry.calls).toFixed(2).padStart(8)} ms × ${String(entry.calls).padStart(5)}  ${oneLine(entry.text).slice(0, 150)}`);
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of each recorded read or write, with the values it was sent with,
 * in a transaction that is rolled back (so a creation or an update explained changes nothing).
 */
export async function explainStatements(store: Store, recorded: Recorded[], print?: (line: string) => void): Promise<Map<string, number>> {
  const rollback = new Error('rollback');
  /** Server-side execution time (ms) of each statement, by key: what machine load disturbs least. */
  const executionMs = new Map<string, number>();
  for (const entry of recorded) {
    if (/pg_advisory|LISTEN|NOTIFY|rate_limit_counters/i.test(entry.text)) continue;
    let plan: string[] = [];
    await store
      .transaction(async (sql) => {
        const { rows } = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${entry.text}`, entry.values);
        plan = rows.map((row) => row['QUERY PLAN']);
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) plan = [`(not explained: ${(error as Error).message})`];
      });
    const execution = plan.map((line) => /Execution Time: ([\d.]+) ms/.exec(line)?.[1]).find((ms) => ms !== undefined);
    if (execution !== undefined) executionMs.set(entry.key, Number(execution));
    if (!print) continue;
    print(`\n-- ${(entry.totalMs / entry.calls).toFixed(2)} ms per call over ${entry.calls} calls: ${oneLine(entry.text).slice(0, 300)}`);
    print(`   values: ${JSON.stringify(entry.values ?? [], (_, value) => (typeof value === 'bigint' ? value.toString() : value)).slice(0, 200)}`);
    for (const line of plan) print(`   ${line}`);
  }
  return executionMs;
}

/** Each statement's server time on the empty and the filled database, side by side. */
export function formatExecutionTimes(empty: Map<string, number>, full: Map<string, number>, recorded: Recorded[]): string[] {
  const lines: string[] = [];
  for (const entry of recorded) {
    const before = empty.get(entry.key);
    const after = full.get(entry.key);
    if (before === undefined || after === undefined) continue;
    const ratio = after / Math.max(before, 0.01);
    lines.push(
      `${before.toFixed(3).padStart(9)} ${after.toFixed(3).padStart(9)} ms ${ratio.toFixed(1).padStart(6)}×${ratio > 2 && after > 0.5 ? ' NOT FLAT' : '         '}  ${oneLine(entry.text).slice(0, 110)} [${entry.key.split('|')[1]!.slice(0, 40)}]`,
    );
  }
  return lines;
}
