import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { afterAll, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/anvil.ts';
import { startDaemon, type Daemon } from '../../src/daemon.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';

/**
 * Issue 28: `svc start` answers `/health` once its API listens, without waiting for the worker's
 * pg-boss start, and `/ready` says not ready until the worker has started. A transaction holding
 * pg-boss's version table stops the worker's start (pg-boss reads it first) until it commits.
 */
const db = useTestDatabase('apifirst');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-apifirst-'));
let daemon: Daemon | undefined;
afterAll(async () => {
  await daemon?.shutdown.kill('test done');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('the API answers /health while the worker is still starting; /ready is 503 until it has started', { timeout: 60_000 }, async () => {
  // pg-boss's schema exists, as after any earlier worker start.
  const boss = new PgBoss({ connectionString: db.connectionString, schema: 'pgboss' });
  await boss.start();
  await boss.stop({ graceful: false, wait: true });

  const blocker = new pg.Client({ connectionString: db.connectionString });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE pgboss.version IN ACCESS EXCLUSIVE MODE');
  const port = await freePort();
  const config = loadConfig({
    DATABASE_URL: db.connectionString,
    PORT: String(port),
    SVC_DATA_DIR: dataDir,
    SVC_ENCRYPTION_KEY: '22'.repeat(32),
    LOG_LEVEL: 'silent',
  });
  const starting = startDaemon({ config, logger: createLogger({ level: 'silent' }), roles: ['api', 'worker'] });
  starting.catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  try {
    let health: Response | undefined;
    for (let waited = 0; waited < 30_000 && !health?.ok; waited += 50) {
      health = await fetch(`${url}/api/v1/health`).catch(() => undefined);
      if (!health?.ok) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(health?.status).toBe(200);
    expect(await health!.json()).toMatchObject({ status: 'healthy', database: 'ok' });
    // The worker is still held by the lock: not ready, saying why.
    const early = await fetch(`${url}/ready`);
    expect(early.status).toBe(503);
    expect(((await early.json()) as { reasons: string[] }).reasons).toContain('the worker role is still starting');
  } finally {
    await blocker.query('COMMIT');
    await blocker.end();
  }
  daemon = await starting;
  expect(daemon.boss).toBeDefined();
  const ready = await fetch(`${url}/ready`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status: 'ready', roles: ['api', 'worker'], reasons: [] });
});
