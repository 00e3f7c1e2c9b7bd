import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { createDatabase } from './db.ts';
import { migrate, MIGRATIONS_DIR } from '../../src/store/migrate.ts';
import { createStore, type Store } from '../../src/store/index.ts';

/**
 * For tests of one migration on a database from before it: folders holding the migrations below
 * a version (plus replaced or extra files), and databases migrated with them. Everything made is
 * removed after the file's tests.
 */
export function useUpgradeDatabases() {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  /** A folder with the migrations whose file names sort below `below` (e.g. '014'), plus `extra` files by name. */
  function migrationsBelow(below: string, extra: Record<string, string> = {}): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-migrations-'));
    cleanup.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    for (const file of fs.readdirSync(MIGRATIONS_DIR).filter((name) => name < below)) fs.copyFileSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file));
    for (const [file, text] of Object.entries(extra)) fs.writeFileSync(path.join(dir, file), text);
    return dir;
  }

  /** A new database migrated with the files in `dir`, and a store on it. */
  async function databaseAt(dir: string, label: string, max = 2): Promise<{ connectionString: string; store: Store }> {
    const database = await createDatabase({ label, migrated: false });
    cleanup.push(database.drop);
    await migrate({ connectionString: database.connectionString, dir });
    const store = createStore({ connectionString: database.connectionString, max });
    cleanup.push(() => store.close());
    return { connectionString: database.connectionString, store };
  }

  return { migrationsBelow, databaseAt };
}

/**
 * A merchant row as the merchants table had it before migration 014 (one sealed secret for both
 * modes): `createMerchant` writes today's schema, which an older database does not have.
 */
export async function insertMerchantBefore014(store: Store, params: { id: string; name: string; sealedSecret: string }): Promise<void> {
  await store.query('INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, $2, $3)', [params.id, params.name, params.sealedSecret]);
}
