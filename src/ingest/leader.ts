import pg from 'pg';
import type { Logger } from '../internal/logger.ts';
import { BaseError } from '../internal/errors.ts';
import type { Sql } from '../store/index.ts';
import type { LockPair } from '../store/lockKeys.ts';

/** How often the lock connection is pinged, so a dead connection ends the lease within seconds. */
const HEARTBEAT_MS = 2_000;

/**
 * This process does not hold its chain's leader lock (any more): raised inside a commit by the
 * fence, or by a one-off pass when another process leads. Its own kind, neither retryable nor a
 * refusal: the work stops, nothing is counted as a failure, and the process stands by to lead
 * again when the lock is free.
 */
export class LeadershipLostError extends BaseError {
  override name = 'LeadershipLostError';
}

/** Held leadership of one chain. `lost` aborts when the lock connection dies. */
export interface Lease {
  readonly lost: AbortSignal;
  /** Throws {@link LeadershipLostError} unless this process still holds the lock (run inside each commit). */
  fence(sql: Sql): Promise<void>;
  release(): Promise<void>;
}

/**
 * Per-chain leader election over Postgres session advisory locks (keys: store/lockKeys.ts), on
 * one dedicated connection per process (not the pool's, whose clients are shared), for every
 * chain this process ingests. The holder keeps the lock as long as its connection lives: when
 * the process dies, Postgres drops the session and the lock with it, and a standby's next
 * `tryAcquire` (every couple of seconds) wins it.
 */
export interface LeaderLocks {
  /** Takes `key` for `chain` (named in logs and errors) when it is free; undefined when another session, or this process already, holds it. */
  tryAcquire(key: LockPair, chain: string): Promise<Lease | undefined>;
  close(): Promise<void>;
}

/** Creates this process's leader locks; the connection (`connection`: the database's client settings) opens on the first `tryAcquire`. */
export function createLeaderLocks(params: { connection: pg.ClientConfig; logger: Logger }): LeaderLocks {
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let lost = new AbortController();
  let pid = 0;
  let heartbeat: NodeJS.Timeout | undefined;
  /** Chains whose lock this process holds, by key. */
  const held = new Map<string, string>();

  function drop(reason: string) {
    if (!client) return;
    params.logger.warn({ msg: 'Leader lock connection lost; leases end', reason, held: [...held.values()] });
    client.end().catch(() => {});
    client = undefined;
    connecting = undefined;
    held.clear();
    clearInterval(heartbeat);
    lost.abort(reason);
  }

  async function connection(): Promise<pg.Client> {
    if (client) return client;
    connecting ??= (async () => {
      const next = new pg.Client({ ...params.connection, application_name: 'svc-ingest-leader' });
      next.on('error', (error) => drop(error.message));
      next.on('end', () => drop('connection ended'));
      await next.connect();
      const { rows } = await next.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      pid = rows[0]!.pid;
      lost = new AbortController();
      client = next;
      heartbeat = setInterval(() => {
        client?.query('SELECT 1').catch((error: Error) => drop(error.message));
      }, HEARTBEAT_MS);
      heartbeat.unref();
      return next;
    })().catch((error) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  }

  return {
    async tryAcquire(key, chain) {
      const id = key.join(':');
      if (held.has(id)) return undefined;
      const conn = await connection();
      const { rows } = await conn.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [key[0], key[1]]);
      if (!rows[0]?.ok) return undefined;
      held.set(id, chain);
      const signal = lost.signal;
      const holderPid = pid;
      return {
        lost: signal,
        // The one fence of every ingest commit: this session still holds exactly this lock.
        async fence(sql) {
          const check = await sql.query(
            `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid
               AND objsubid = 2 AND pid = $3 AND granted`,
            [key[0], key[1], holderPid],
          );
          if (check.rowCount !== 1 || signal.aborted) throw new LeadershipLostError(`lost the ${chain} ingest lock; another process may be the leader now`);
        },
        async release() {
          if (!held.delete(id) || signal.aborted || client !== conn) return;
          await conn.query('SELECT pg_advisory_unlock($1, $2)', [key[0], key[1]]).catch(() => {});
        },
      };
    },
    async close() {
      clearInterval(heartbeat);
      const current = client;
      client = undefined;
      held.clear();
      current?.removeAllListeners('end');
      await current?.end().catch(() => {});
    },
  };
}
