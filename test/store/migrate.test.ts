import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterEach, describe, expect, test } from 'vitest';
import { createDatabase } from '../helpers/db.ts';
import { applyOrder, migrate, readMigrations } from '../../src/store/migrate.ts';

const run = promisify(execFile);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function emptyDatabase() {
  const database = await createDatabase({ label: 'migrate', migrated: false });
  cleanups.push(database.drop);
  return database;
}

async function appliedVersions(connectionString: string): Promise<number[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
  await client.end();
  return rows.map((row) => row.version);
}

describe('migrate()', () => {
  const all = readMigrations().map((migration) => migration.version);

  test('applies every migration once; a second run applies nothing', async () => {
    const { connectionString } = await emptyDatabase();
    expect(await migrate({ connectionString })).toEqual(all);
    expect(await migrate({ connectionString })).toEqual([]);
    expect(await appliedVersions(connectionString)).toEqual(all);
  });

  test('two processes migrating one database at once: each migration applied exactly once', async () => {
    const { connectionString } = await emptyDatabase();
    const env = { ...process.env, DATABASE_URL: connectionString, LOG_LEVEL: 'warn' };
    const [first, second] = await Promise.all(
      [0, 1].map(() => run(process.execPath, ['bin/svc.js', 'migrate', '--json'], { env }).then(({ stdout }) => JSON.parse(stdout).applied as number[])),
    );
    expect([...first!, ...second!].sort((a, b) => a - b)).toEqual(all);
    expect(await appliedVersions(connectionString)).toEqual(all);
  });

  test('a migration edited after it was applied stops start-up', async () => {
    const { connectionString } = await emptyDatabase();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true }));
    fs.writeFileSync(path.join(dir, '001_first.sql'), 'CREATE TABLE first_table (id int);');
    expect(await migrate({ connectionString, dir })).toEqual([1]);
    fs.writeFileSync(path.join(dir, '001_first.sql'), 'CREATE TABLE first_table (id bigint);');
    await expect(migrate({ connectionString, dir })).rejects.toThrow('migration 1_first.sql changed after it was applied; add a new migration instead');
  });

  test('a failing migration rolls back entirely and records nothing', async () => {
    const { connectionString } = await emptyDatabase();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true }));
    fs.writeFileSync(path.join(dir, '001_ok.sql'), 'CREATE TABLE ok_table (id int);');
    fs.writeFileSync(path.join(dir, '002_broken.sql'), 'CREATE TABLE half_table (id int); SELECT no_such_function();');
    await expect(migrate({ connectionString, dir })).rejects.toThrow('migration 2_broken.sql failed');
    expect(await appliedVersions(connectionString)).toEqual([1]);
    const client = new pg.Client({ connectionString });
    await client.connect();
    const { rows } = await client.query("SELECT to_regclass('half_table') AS half");
    await client.end();
    expect(rows[0].half).toBeNull();
  });

  test('two migration files with one number are refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    fs.writeFileSync(path.join(dir, '001_a.sql'), 'SELECT 1;');
    fs.writeFileSync(path.join(dir, '001_b.sql'), 'SELECT 1;');
    expect(() => readMigrations(dir)).toThrow('two migrations are numbered 1: a and b');
    fs.rmSync(dir, { recursive: true });
  });

  test('a migration numbered below the newest applied one is still applied', async () => {
    const { connectionString } = await emptyDatabase();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true }));
    fs.writeFileSync(path.join(dir, '001_a.sql'), 'CREATE TABLE a_table (id int);');
    fs.writeFileSync(path.join(dir, '003_c.sql'), 'CREATE TABLE c_table (id int);');
    expect(await migrate({ connectionString, dir })).toEqual([1, 3]);
    fs.writeFileSync(path.join(dir, '002_b.sql'), 'CREATE TABLE b_table (id int);');
    expect(await migrate({ connectionString, dir })).toEqual([2]);
  });

  test('a migration marked "before NNN" runs just before NNN while NNN is pending, in its own place once NNN is applied', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true }));
    fs.writeFileSync(path.join(dir, '001_a.sql'), 'SELECT 1;');
    fs.writeFileSync(path.join(dir, '002_b.sql'), 'SELECT 1;');
    fs.writeFileSync(path.join(dir, '003_c.sql'), 'SELECT 1;');
    fs.writeFileSync(path.join(dir, '004_fix_b.sql'), '-- 004: corrects 002.\n-- migrate: before 002\nSELECT 1;');
    const migrations = readMigrations(dir);
    expect(migrations.find((migration) => migration.version === 4)?.before).toBe(2);
    expect(applyOrder(migrations).map((migration) => migration.version)).toEqual([1, 4, 2, 3]);
    expect(applyOrder(migrations.filter((migration) => migration.version > 2)).map((migration) => migration.version)).toEqual([3, 4]);
    // Only an earlier migration that is not itself moved can be named.
    fs.writeFileSync(path.join(dir, '005_bad.sql'), '-- migrate: before 006\nSELECT 1;');
    expect(() => readMigrations(dir)).toThrow('migration 5_bad.sql says "before 6": that must be an earlier migration that has no "before" itself');
  });
});
