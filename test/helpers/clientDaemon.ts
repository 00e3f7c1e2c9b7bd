import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { useTestDatabase } from './db.ts';
import { startDaemon, type Daemon } from '../../src/daemon.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';

/**
 * A real daemon for a client library's end-to-end test: every role (API on a loopback port,
 * webhook worker, sandbox chains) on the test file's own database, as `npm start` runs it. The
 * first start makes the merchant and prints its test key, which the test uses like a reader
 * of the quick start would. Sandbox blocks every 20 ms, so a sandbox payment confirms in well
 * under a second; sandbox webhooks may go to loopback (the default `SVC_WEBHOOK_ALLOW_PRIVATE`).
 */
export function useDaemon(label: string) {
  const db = useTestDatabase(label);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-${label}-`));
  let daemon: Daemon | undefined;
  beforeAll(async () => {
    const config = loadConfig({
      DATABASE_URL: db.connectionString,
      HOST: '127.0.0.1',
      PORT: '0',
      SVC_DATA_DIR: dataDir,
      SVC_SANDBOX_BLOCK_MS: '20',
      LOG_LEVEL: 'silent',
    });
    daemon = await startDaemon({ config, logger: createLogger({ level: 'silent' }), roles: ['api', 'worker', 'ingest'] });
  });
  afterAll(async () => {
    await daemon?.shutdown.kill('test done');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    /** The API base URL, `http://127.0.0.1:<port>/api/v1`. */
    get baseUrl(): string {
      return `${daemon!.url!.replace('localhost', '127.0.0.1')}/api/v1`;
    },
    /** The test key the first start made. */
    get testKey(): string {
      return daemon!.bootstrap!.testKey;
    },
    /** The sandbox webhook secret the first start printed beside it (what the quick starts verify with). */
    get webhookSecret(): string {
      return daemon!.bootstrap!.sandboxWebhookSecret;
    },
    db,
  };
}
