import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { sha256Hex } from '../internal/crypto.ts';
import { NonRetryableError } from '../internal/errors.ts';
import { MIGRATION_LOCK_KEY } from './lockKeys.ts';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
  /** From a `-- migrate: before NNN` line: applied just before migration NNN when both are pending. */
  before?: number;
}

/**
 * Checksums a landed migration also carried on main for a while, by version: a database that
 * applied one of these texts is accepted as having applied the migration. 011 was edited after it
 * landed (commit 2b2c5a2, a different choice of which duplicate row to keep, same schema); the
 * original text is back in the file and databases that applied either text start. The edit's
 * correction is migration 012. Never add to this list to excuse a new edit: add a migration.
 */
const SUPERSEDED_CHECKSUMS: Readonly<Record<number, readonly string[]>> = {
  11: ['6f3310f82effbd07bcfdfbb01fc5b06b200ef7abe5c0ec561d6248d8f251b2f9'],
};

/** `-- migrate: before NNN` on a line of its own, in the comment block the file starts with. */
const BEFORE_LINE = /^-- migrate: before (\d+)\s*$/;

function beforeOf(sql: string): number | undefined {
  for (const line of sql.split('\n')) {
    if (!line.startsWith('--')) return undefined;
    const match = BEFORE_LINE.exec(line);
    if (match) return Number(match[1]);
  }
  return undefined;
}

/**
 * Reads `NNN_name.sql` files in version order. Two files with one number are an error; a gap is
 * allowed (work in parallel branches may land its numbers in any order), and a database that
 * has a later version than a missing one still gets the missing one applied.
 */
export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations = fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => {
      const match = /^(\d+)_([a-z0-9_]+)\.sql$/.exec(file);
      if (!match) throw new NonRetryableError(`migration file ${file} is not named NNN_name.sql`);
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      const before = beforeOf(sql);
      return { version: Number(match[1]), name: match[2]!, sql, checksum: sha256Hex(sql), ...(before === undefined ? {} : { before }) };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    const previous = migrations[index - 1];
    if (previous && previous.version === migration.version) {
      throw new NonRetryableError(`two migrations are numbered ${migration.version}: ${previous.name} and ${migration.name}`);
    }
    const target = migration.before === undefined ? undefined : migrations.find((other) => other.version === migration.before);
    if (migration.before !== undefined && (!target || target.version >= migration.version || target.before !== undefined)) {
      throw new NonRetryableError(
        `migration ${migration.version}_${migration.name}.sql says "before ${migration.before}": that must be an earlier migration that has no "before" itself`,
      );
    }
  });
  return migrations;
}

/**
 * The order in which `pending` migrations are applied: by number, except that one marked
 * `before NNN` goes just before NNN when NNN is pending too. That is how a correction of a landed
 * migration (which is never edited) still takes effect on a database that has not applied it yet;
 * where NNN is already applied the correction runs in its place in the numbering.
 */
export function applyOrder(pending: Migration[]): Migration[] {
  const versions = new Set(pending.map((migration) => migration.version));
  const anchor = (migration: Migration) => (migration.before !== undefined && versions.has(migration.before) ? migration.before : migration.version);
  return [...pending].sort((a, b) => anchor(a) - anchor(b) || Number(anchor(a) === a.version) - Number(anchor(b) === b.version) || a.version - b.version);
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, each in its own
 * transaction, in order, while holding an advisory lock: a second process starting at the same
 * moment waits, then finds nothing left to do. A landed migration whose file changed stops
 * start-up: migrations only grow (a text in {@link SUPERSEDED_CHECKSUMS} is the one exception).
 * @returns the versions applied by this call, in number order (see {@link applyOrder} for the order applied).
 */
export async function migrate(params: { connectionString: string; dir?: string }): Promise<number[]> {
  const migrations = readMigrations(params.dir);
  const client = new pg.Client({ connectionString: params.connectionString, application_name: 'svc-migrate' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ version: number; checksum: string; name: string }>(
      'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
    );
    const applied = new Map(rows.map((row) => [row.version, row]));
    for (const row of rows) {
      const file = migrations.find((migration) => migration.version === row.version);
      if (!file) throw new NonRetryableError(`database has migration ${row.version} (${row.name}) that this code does not know: is this an older release?`);
      if (file.checksum !== row.checksum && !SUPERSEDED_CHECKSUMS[row.version]?.includes(row.checksum)) {
        throw new NonRetryableError(`migration ${row.version}_${row.name}.sql changed after it was applied; add a new migration instead`);
      }
    }
    const done: number[] = [];
    for (const migration of applyOrder(migrations.filter((candidate) => !applied.has(candidate.version)))) {
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          migration.checksum,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new NonRetryableError(`migration ${migration.version}_${migration.name}.sql failed`, { cause: error, details: (error as Error).message });
      }
      done.push(migration.version);
    }
    return done.sort((a, b) => a - b);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}
