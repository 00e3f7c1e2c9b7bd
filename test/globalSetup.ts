import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { createLogger } from '../src/internal/logger.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the test cluster; each test file creates its own database on it. */
    pgAdminUrl: string;
  }
}

/**
 * One real Postgres for the whole run: TEST_DATABASE_URL when set (a superuser URL), otherwise an
 * embedded cluster under `.data/test-postgres`. Databases of earlier runs (kept because a test
 * failed) are dropped here, so a failure's database survives until the next run.
 */
export default async function setup(project: TestProject) {
  const logger = createLogger({ level: 'warn' });
  let adminUrl = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres({
      dataDir: path.resolve('.data/test'),
      port: Number(process.env.TEST_PG_PORT ?? 54339),
      logger,
    });
    adminUrl = embedded.connectionString;
    stop = embedded.stop;
  }
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'svc_test_%'");
  for (const row of rows) await client.query(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`);
  await client.end();
  project.provide('pgAdminUrl', adminUrl);
  return stop;
}
