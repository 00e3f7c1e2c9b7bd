/**
 * Where a bench's database time goes, measured beside its runs: the CPU time of the Postgres
 * processes, the time per statement (pg_stat_statements) and the backends' wait events.
 */
import fs from 'node:fs';
import pg from 'pg';

/** See {@link createStatementStats}. */
export interface StatementStats {
  reset(): Promise<void>;
  top(requests: number, count?: number): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Per-statement time inside Postgres (pg_stat_statements: planning plus execution, lock waits
 * included; a commit's WAL flush is not, it follows the statement), reset by `reset()` and read by `top(requests)` as microseconds
 * per request of the run, largest first. Needs `benchDatabase(…, { statements: true })` (bench/lib.ts).
 */
export async function createStatementStats(connectionString: string): Promise<StatementStats> {
  const client = new pg.Client({ connectionString, application_name: 'svc-bench-statements' });
  // The cluster stops at the end of the bench: that is not an error worth a crash.
  client.on('error', () => {});
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    async reset(): Promise<void> {
      await client.query('SELECT pg_stat_statements_reset()');
    },
    async top(requests: number, count = 8): Promise<string[]> {
      const { rows } = await client.query<{ query: string; calls: string; plans: string; micros: number }>(
        `SELECT regexp_replace(query, '[[:space:]]+', ' ', 'g') AS query, calls::text, plans::text, (total_plan_time + total_exec_time) * 1000 AS micros
           FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_%' ORDER BY micros DESC LIMIT $1`,
        [count],
      );
      return rows.map(
        (row) =>
          `${(row.micros / Math.max(1, requests)).toFixed(0).padStart(6)} µs/req  ${String(Number(row.calls) / Math.max(1, requests))
            .slice(0, 4)
            .padStart(4)} calls/req  ${planned(row)}  ${row.query.slice(0, 110)}`,
      );
    },
    close: () => client.end().catch(() => {}),
  };
}

/**
 * How often a statement was planned, as a share of its calls (with track_planning on): a
 * prepared statement on a generic plan is planned about once per connection, a custom plan or
 * an unprepared statement at every call.
 */
function planned(row: { calls: string; plans: string }): string {
  const share = Number(row.plans) / Math.max(1, Number(row.calls));
  return `planned ${`${Math.round(share * 100)}`.padStart(3)} %`;
}

/**
 * Samples what Postgres's client backends are doing (pg_stat_activity's wait events, `CPU` when
 * active and not waiting) every `everyMs` until `until` settles: where a load's database time
 * goes (commit flushes `IO:WALSync`, row or advisory locks `Lock:*`, the network `Client:*`).
 * Returns each state's share of the samples of active backends, largest first.
 */
export async function sampleWaitEvents<T>(connectionString: string, until: Promise<T>, everyMs = 10): Promise<{ result: T; waits: [string, number][] }> {
  const client = new pg.Client({ connectionString, application_name: 'svc-bench-sampler' });
  await client.connect();
  const counts = new Map<string, number>();
  let done = false;
  const sampling = (async () => {
    while (!done) {
      const { rows } = await client.query<{ state: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS state FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()`,
      );
      for (const { state } of rows) counts.set(state, (counts.get(state) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  try {
    const result = await until;
    return { result, waits: shares(counts) };
  } finally {
    done = true;
    await sampling;
    await client.end();
  }
}

function shares(counts: Map<string, number>): [string, number][] {
  const total = [...counts.values()].reduce((sum, n) => sum + n, 0) || 1;
  return [...counts].map(([state, n]): [string, number] => [state, n / total]).sort((a, b) => b[1] - a[1]);
}

/** `IO:WALSync 41 %, CPU 30 %, …`: the first `top` shares of {@link sampleWaitEvents}. */
export function formatWaits(waits: [string, number][], top = 5): string {
  return waits
    .slice(0, top)
    .map(([state, share]) => `${state} ${(100 * share).toFixed(0)} %`)
    .join(', ');
}

/** See {@link createDatabaseCpuMeter}. */
export interface DatabaseCpuMeter {
  snapshot(): Map<string, number> | undefined;
  /** Microseconds of CPU since `before`, a snapshot. */
  since(before: Map<string, number> | undefined): number | undefined;
}

/**
 * CPU time (user + system, in microseconds) used by a local Postgres cluster between a
 * `snapshot()` and `since(snapshot)`: its postmaster and every process it started (backends, WAL
 * writer, checkpointer), read from /proc. `undefined` where /proc is not available or the cluster
 * is not local.
 */
export async function createDatabaseCpuMeter(connectionString: string): Promise<DatabaseCpuMeter> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'`);
  await client.end();
  const stat = (pid: number | string) => {
    try {
      // Fields after the command name (which may hold spaces): state is field 3, ppid 4, utime 14, stime 15.
      const fields = fs
        .readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /, '')
        .split(' ');
      return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
    } catch {
      return undefined;
    }
  };
  const postmaster = rows[0] ? stat(rows[0].pid)?.ppid : undefined;
  // Linux reports CPU time in clock ticks of 1/100 s (USER_HZ) on every common platform.
  const MICROS_PER_TICK = 10_000;
  const snapshot = (): Map<string, number> | undefined => {
    if (postmaster === undefined) return undefined;
    const ticks = new Map<string, number>([[String(postmaster), stat(postmaster)?.ticks ?? 0]]);
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const child = stat(entry);
      if (child?.ppid === postmaster) ticks.set(entry, child.ticks);
    }
    return ticks;
  };
  return {
    snapshot,
    // A process that exited in between is missing from the sum (an autovacuum worker, say): a
    // slight undercount, never a negative one.
    since(before) {
      const after = snapshot();
      if (!before || !after) return undefined;
      let ticks = 0;
      for (const [pid, now] of after) ticks += now - (before.get(pid) ?? 0);
      return ticks * MICROS_PER_TICK;
    },
  };
}
