import type { Sql, Store } from '../src/store/index.ts';

/** A statement as the code sent it, with the time it took (the first values it was sent with are kept). */
interface Recorded {
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
    const entry = statements.get(text);
    if (entry) {
      entry.calls += 1;
      entry.totalMs += ms;
    } else statements.set(text, { text, values, calls: 1, totalMs: ms });
  };
  const wrapSql = (sql: Sql): Sql => ({
    async query(text, values) {
      const started = performance.now();
      try {
        return await sql.query(text, values);
      } finally {
        note(text, values, performance.now() - started);
      }
    },
  });
  const wrap = (store: Store): Store => ({
    pool: store.pool,
    limits: store.limits,
    query: wrapSql(store).query as Store['query'],
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
export async function explainStatements(store: Store, recorded: Recorded[], print: (line: string) => void): Promise<void> {
  const rollback = new Error('rollback');
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
    print(`\n-- ${(entry.totalMs / entry.calls).toFixed(2)} ms per call over ${entry.calls} calls: ${oneLine(entry.text).slice(0, 300)}`);
    for (const line of plan) print(`   ${line}`);
  }
}
