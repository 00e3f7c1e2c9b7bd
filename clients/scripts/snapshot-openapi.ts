/**
 * Writes `clients/openapi.json`: the daemon's OpenAPI document as `GET /api/v1/openapi.json`
 * serves it, the input of every generated client file.
 *
 *   npx tsx clients/scripts/snapshot-openapi.ts
 *
 * The real API (src/api, every route the daemon registers) is built in this process and asked
 * for the document with `inject`. Serving the document reads no table, so the store points at a
 * closed port and no Postgres is needed: the snapshot takes a second and is the same on every
 * machine. The public URL is the default one, so `servers` is `http://127.0.0.1:8080`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { createStore } from '../../src/store/index.ts';
import { writeIfChanged } from './files.ts';

/** Where the snapshot lives, beside the clients it generates. */
export const SNAPSHOT_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../openapi.json');

/** The document exactly as the daemon serves it with its default configuration. */
export async function fetchOpenApiDocument(): Promise<Record<string, unknown>> {
  // Nothing listens on port 1: a query would fail at once, and none is made.
  const store = createStore({ connectionString: 'postgres://openapi@127.0.0.1:1/none', max: 1 });
  const app = createHttp({
    store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    // An explicit environment: the snapshot must not change with the shell it runs in.
    config: loadConfig({ LOG_LEVEL: 'silent' }),
    box: createSecretBox(Buffer.alloc(32)),
  });
  try {
    const response = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    if (response.statusCode !== 200) throw new Error(`GET /api/v1/openapi.json answered ${response.statusCode}: ${response.body}`);
    return response.json() as Record<string, unknown>;
  } finally {
    await app.close();
    await store.close();
  }
}

/** The snapshot file's text: two-space JSON and a final newline, so diffs stay readable. */
export function snapshotText(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const changed = writeIfChanged(SNAPSHOT_PATH, snapshotText(await fetchOpenApiDocument()));
  console.log(`${path.relative(process.cwd(), SNAPSHOT_PATH)}: ${changed ? 'updated' : 'unchanged'}`);
}
