/**
 * The database faults of the database-pressure run (bench/chaos/dbPressure.ts), each made from
 * outside the gateway with a superuser connection to its cluster, as they happen in production:
 * the cluster turned read-only, every connection slot taken, a hot table locked.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../../src/store/embedded.ts';
import { createLogger } from '../../../src/internal/logger.ts';

/** A throwaway cluster of the run's own (its faults are cluster-wide), with the gateway's role. */
export interface PressureCluster {
  /** Superuser, database `postgres`: what makes the faults. */
  adminUrl: string;
  /** The gateway's login (not a superuser: superuser-reserved slots do not let it through), database `svc`. */
  gatewayUrl: string;
  /** Superuser on the gateway's database: what the audit reads with. */
  auditUrl: string;
  close(): Promise<void>;
}

/** Starts an embedded cluster on `port` with a `svc` role owning a `svc` database. */
export async function startPressureCluster(port: number): Promise<PressureCluster> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chaos-pg-'));
  const embedded = await startEmbeddedPostgres({ dataDir, port, logger: createLogger({ level: 'warn' }) });
  const password = 'chaos';
  await withClient(embedded.connectionString, async (client) => {
    await client.query(`CREATE ROLE svc LOGIN PASSWORD '${password}'`);
    await client.query('CREATE DATABASE svc OWNER svc');
  });
  const at = (user: string, pass: string, database: string) => {
    const url = new URL(embedded.connectionString);
    url.username = user;
    url.password = pass;
    url.pathname = `/${database}`;
    return url.toString();
  };
  const admin = new URL(embedded.connectionString);
  return {
    adminUrl: embedded.connectionString,
    gatewayUrl: at('svc', password, 'svc'),
    auditUrl: at(admin.username, decodeURIComponent(admin.password), 'svc'),
    async close() {
      await embedded.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fault in place; `end` lifts it. */
export interface Fault {
  name: string;
  /** What was done, for the report (e.g. how many connections were taken). */
  detail: string;
  end(): Promise<void>;
}

/**
 * The whole cluster read-only, as a hot standby is: `default_transaction_read_only` set for
 * every session (a reload reaches the open ones too), so every write fails with 25006.
 */
export async function makeReadOnly(adminUrl: string): Promise<Fault> {
  await withClient(adminUrl, async (client) => {
    await client.query('ALTER SYSTEM SET default_transaction_read_only = on');
    await client.query('SELECT pg_reload_conf()');
  });
  return {
    name: 'read-only',
    detail: 'default_transaction_read_only = on for every session (ALTER SYSTEM + reload)',
    end: () =>
      withClient(adminUrl, async (client) => {
        await client.query('ALTER SYSTEM RESET default_transaction_read_only');
        await client.query('SELECT pg_reload_conf()');
      }),
  };
}

/**
 * Every connection slot taken from outside: the gateway's connections are closed by the server
 * (as a restart or a connection-pooler failover closes them) and the slots filled before it can
 * take them back, so each new connection of the gateway is refused (53300).
 */
export async function takeAllConnections(adminUrl: string): Promise<Fault> {
  const held: pg.Client[] = [];
  const grab = async () => {
    for (;;) {
      const client = new pg.Client({ connectionString: adminUrl });
      try {
        await client.connect();
      } catch {
        return;
      }
      client.on('error', () => {});
      held.push(client);
    }
  };
  const max = await withClient(adminUrl, async (client) => Number((await client.query('SHOW max_connections')).rows[0].max_connections));
  await grab();
  // The gateway reconnects as soon as its connections are closed: close and fill again until a
  // pass finds none of its connections left.
  for (let pass = 0; pass < 5; pass++) {
    const { rows } = await held[0]!.query(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE usename = 'svc'`);
    await grab();
    if (rows[0].n === 0) break;
  }
  return {
    name: 'out of connections',
    detail: `${held.length} of max_connections ${max} held from outside (superuser-reserved ones included)`,
    async end() {
      await Promise.all(held.map((client) => client.end().catch(() => {})));
    },
  };
}

/**
 * A hot table locked (ACCESS EXCLUSIVE: no read or write gets through) by a transaction held
 * open, as a migration or an operator's `LOCK TABLE` does; `end` commits it.
 */
export async function lockTable(auditUrl: string, table: string): Promise<Fault> {
  const client = new pg.Client({ connectionString: auditUrl });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return {
    name: `slow (${table} locked)`,
    detail: `LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE in an open transaction`,
    async end() {
      await client.query('COMMIT').catch(() => {});
      await client.end().catch(() => {});
    },
  };
}
