import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { createLogger } from '../src/internal/logger.ts';
import { freePort } from './helpers/anvil.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the test cluster; each test file creates its own database on it. */
    pgAdminUrl: string;
  }
}

/** Test databases older than this are leftovers of earlier runs (kept because a test failed). */
const STALE_AFTER_SECONDS = 6 * 3600;

/**
 * One real Postgres for the whole run: TEST_DATABASE_URL when set (a superuser URL), otherwise an
 * embedded cluster under TEST_PG_DIR (default `.data/test`) on TEST_PG_PORT (default: a free port); a
 * run that finds that cluster already running (another run in parallel) shares it. Each test
 * database's name carries its creation time; those older than six hours are dropped here, so a
 * failed test's database survives for inspection without piling up.
 */
export default async function setup(project: TestProject) {
  const logger = createLogger({ level: 'warn' });
  let adminUrl = process.env.TEST_DATABASE_URL;
  let stop = async () => {};
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres({
      dataDir: path.resolve(process.env.TEST_PG_DIR ?? '.data/test'),
      // A free port unless one is given: a fixed port inside the ephemeral range can be taken by
      // any process's outgoing connection or test server at the wrong moment.
      port: process.env.TEST_PG_PORT ? Number(process.env.TEST_PG_PORT) : await freePort(),
      logger,
    });
    adminUrl = embedded.connectionString;
    stop = embedded.stop;
  }
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'svc_test_%'");
  const now = Math.floor(Date.now() / 1000);
  for (const { datname } of rows) {
    const created = Number(/^svc_test_(\d+)_/.exec(datname)?.[1] ?? 0);
    if (now - created > STALE_AFTER_SECONDS) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  }
  await client.end();
  project.provide('pgAdminUrl', adminUrl);
  return stop;
}
