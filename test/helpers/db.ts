import pg from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { randomBase62 } from '../../src/internal/crypto.ts';
import { migrate } from '../../src/store/migrate.ts';
import { createStore, type Store } from '../../src/store/index.ts';

export interface TestDatabase {
  name: string;
  connectionString: string;
  store: Store;
}

function withDatabase(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database on the test cluster; `migrated` applies migrations/. */
export async function createDatabase(
  params: { label?: string; migrated?: boolean } = {},
): Promise<{ name: string; connectionString: string; drop(): Promise<void> }> {
  const name = `svc_test_${Math.floor(Date.now() / 1000)}_${(params.label ?? 'db')
    .replace(/[^a-z0-9]/gi, '_')
    .toLowerCase()
    .slice(0, 30)}_${randomBase62(8).toLowerCase()}`;
  await admin((client) => client.query(`CREATE DATABASE "${name}"`));
  const connectionString = withDatabase(inject('pgAdminUrl'), name);
  if (params.migrated ?? true) await migrate({ connectionString });
  return {
    name,
    connectionString,
    drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => {}),
  };
}

/**
 * A fresh migrated database for the calling test file, with a store on it. It is dropped after
 * the file unless a test failed, in which case its name is printed and it is kept for inspection
 * (until the next run starts).
 */
export function useTestDatabase(label: string): TestDatabase {
  const handle = {} as TestDatabase;
  let failed = false;
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    const database = await createDatabase({ label });
    handle.name = database.name;
    handle.connectionString = database.connectionString;
    handle.store = createStore({ connectionString: database.connectionString, max: 5 });
    drop = database.drop;
  });
  beforeEach((context) => {
    context.onTestFailed(() => {
      failed = true;
    });
  });
  afterAll(async () => {
    await handle.store?.close();
    if (failed) console.error(`kept database ${handle.name} for inspection: ${handle.connectionString}`);
    else await drop();
  });
  return handle;
}
