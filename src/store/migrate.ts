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
      return { version: Number(match[1]), name: match[2]!, sql, checksum: sha256Hex(sql) };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    const previous = migrations[index - 1];
    if (previous && previous.version === migration.version) {
      throw new NonRetryableError(`two migrations are numbered ${migration.version}: ${previous.name} and ${migration.name}`);
    }
  });
  return migrations;
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, each in its own
 * transaction, in order, while holding an advisory lock: a second process starting at the same
 * moment waits, then finds nothing left to do. A landed migration whose file changed stops
 * start-up: migrations only grow.
 * @returns the versions applied by this call.
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
      if (file.checksum !== row.checksum) {
        throw new NonRetryableError(`migration ${row.version}_${row.name}.sql changed after it was applied; add a new migration instead`);
      }
    }
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
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
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}
