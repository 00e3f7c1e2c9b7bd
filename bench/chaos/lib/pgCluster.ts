/**
 * A primary and one streaming standby from Debian's PostgreSQL 15 packages (`apt-get install -y
 * postgresql`: initdb, postgres, pg_basebackup), for the failover run. Each server runs in a
 * process group of its own, so `kill()` is a host loss: SIGKILL to the postmaster and every
 * backend at once. As root (CI), the servers run as the `postgres` OS user the package creates.
 *
 * The standby streams through `replicationLink` (a TCP router, tcpRouter.ts), so a run can hold
 * replication back and show what an asynchronous standby loses.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { postgresUserIds } from '../../../src/store/postgresProcess.ts';
import { freePort } from '../../../test/helpers/anvil.ts';
import { createTcpRouter, type TcpRouter } from './tcpRouter.ts';

/** Where Debian's packages put the server binaries. */
export const PG_BIN = '/usr/lib/postgresql/15/bin';

/** Whether Debian's PostgreSQL 15 server binaries are installed (`.ci/run` installs them). */
export function hasDebianPostgres(): boolean {
  return ['initdb', 'postgres', 'pg_basebackup'].every((name) => fs.existsSync(path.join(PG_BIN, name)));
}

export interface PgServer {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  /** Superuser URL of the `svc` database on this server (direct, no router). */
  readonly url: string;
  child: ChildProcess;
  /** SIGKILL to the whole server (postmaster and backends): the host is gone. */
  kill(): void;
  stop(): Promise<void>;
}

export interface PgCluster {
  primary: PgServer;
  standby: PgServer;
  /** The standby's replication connection passes here; `down()` it to make the standby lag. */
  replicationLink: TcpRouter;
  mode: 'sync' | 'async';
  /** Promotes the standby (pg_promote, waiting for it) and returns how long it took. */
  promote(): Promise<number>;
  /** WAL bytes the primary wrote that the standby has not received (the lag an async standby would lose). */
  lagBytes(): Promise<bigint>;
  close(): Promise<void>;
}

const ids = postgresUserIds();

/** Runs a server tool as the postgres user, without blocking the event loop (the replication link runs in this process). */
async function asPostgres(command: string, args: string[]) {
  await promisify(execFile)(path.join(PG_BIN, command), args, { ...ids, env: { PATH: process.env.PATH!, LC_ALL: 'C.UTF-8' } });
}

function ownedTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (ids.uid !== undefined) fs.chownSync(dir, ids.uid, ids.gid!);
  fs.chmodSync(dir, 0o700);
  return dir;
}

async function startServer(name: string, dir: string, port: number, flags: string[]): Promise<PgServer> {
  const child = spawn(path.join(PG_BIN, 'postgres'), ['-D', dir, '-p', String(port), '-k', dir, ...flags], {
    ...ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH!, LC_ALL: 'C.UTF-8' },
  });
  let log = '';
  child.stderr!.on('data', (chunk) => {
    log = (log + chunk).slice(-4000);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/svc`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} postgres exited: ${log}`);
    const client = new pg.Client({ connectionString: url.replace('/svc', '/postgres') });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`${name} postgres did not start: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const server: PgServer = {
    name,
    port,
    dir,
    url,
    child,
    kill() {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid!, 'SIGINT');
      await exited;
    },
  };
  return server;
}

/**
 * Starts a primary (database `svc`) and a standby made from its base backup. `sync`: the primary
 * names the standby in `synchronous_standby_names` with `synchronous_commit = on` (a commit returns
 * once the standby has flushed it), as CloudNativePG's `minSyncReplicas: 1` does; `async`: plain
 * streaming. fsync is off: the runs kill processes, not machines, and the page cache survives a
 * SIGKILL (a machine loss needs fsync on; the guarantees are the same, only slower).
 */
export async function startPgCluster(params: { mode: 'sync' | 'async' }): Promise<PgCluster> {
  const primaryDir = ownedTempDir('svc-pg-primary-');
  await asPostgres('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  fs.appendFileSync(path.join(primaryDir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n');
  const common = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=off', '-c', 'wal_level=replica', '-c', 'max_wal_senders=5'];
  const primary = await startServer('primary', primaryDir, await freePort(), [...common, '-c', 'wal_keep_size=1GB']);
  const admin = new pg.Client({ connectionString: primary.url.replace('/svc', '/postgres') });
  await admin.connect();
  await admin.query('CREATE DATABASE svc');
  await admin.end();

  const replicationLink = await createTcpRouter(primary.port);
  const standbyDir = ownedTempDir('svc-pg-standby-');
  fs.rmSync(standbyDir, { recursive: true });
  await asPostgres('pg_basebackup', [
    '-h',
    '127.0.0.1',
    '-p',
    String(replicationLink.port),
    '-U',
    'postgres',
    '-D',
    standbyDir,
    '-X',
    'stream',
    '-R',
    '-c',
    'fast',
  ]);
  fs.appendFileSync(
    path.join(standbyDir, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${replicationLink.port} user=postgres application_name=standby'\nwal_retrieve_retry_interval = '500ms'\n`,
  );
  // Once promoted, the standby is a primary with no standby of its own: it must not wait for one.
  const standby = await startServer('standby', standbyDir, await freePort(), [...common, '-c', 'synchronous_standby_names=']);
  if (params.mode === 'sync') {
    // Named only now: a synchronous primary with no standby yet would wait forever on every commit.
    const client = new pg.Client({ connectionString: primary.url });
    await client.connect();
    await client.query("ALTER SYSTEM SET synchronous_standby_names = 'standby'");
    await client.query('SELECT pg_reload_conf()');
    for (;;) {
      const { rows } = await client.query("SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby' AND sync_state = 'sync'");
      if (rows.length === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await client.end();
  }

  const cluster: PgCluster = {
    primary,
    standby,
    replicationLink,
    mode: params.mode,
    async promote() {
      const started = performance.now();
      const client = new pg.Client({ connectionString: standby.url });
      await client.connect();
      await client.query('SELECT pg_promote(true, 60)');
      await client.end();
      return performance.now() - started;
    },
    async lagBytes() {
      const p = new pg.Client({ connectionString: primary.url });
      const s = new pg.Client({ connectionString: standby.url });
      await Promise.all([p.connect(), s.connect()]);
      try {
        const [{ rows: a }, { rows: b }] = await Promise.all([
          p.query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn'),
          s.query<{ lsn: string | null }>('SELECT pg_last_wal_receive_lsn()::text AS lsn'),
        ]);
        const lsn = (text: string) => {
          const [high, low] = text.split('/');
          return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
        };
        return b[0]!.lsn ? lsn(a[0]!.lsn) - lsn(b[0]!.lsn) : -1n;
      } finally {
        await Promise.all([p.end(), s.end()]);
      }
    },
    async close() {
      for (const server of [primary, standby]) {
        server.kill();
        fs.rmSync(server.dir, { recursive: true, force: true });
      }
      await replicationLink.close();
    },
  };
  return cluster;
}
