import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { startFreezableProxy, type FreezableProxy } from '../helpers/freezableProxy.ts';
import { startDaemon, type Daemon, type Role } from '../../src/daemon.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';

/**
 * `/ready` per role (src/readiness.ts), on the ports a probe uses: the API port for the api role,
 * the metrics port (SVC_METRICS_PORT) for every role. Real daemons, real Postgres behind a proxy
 * that can take the database down.
 */
const db = useTestDatabase('ready');
const logger = createLogger({ level: 'silent' });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-ready-'));
const daemons: Daemon[] = [];
let proxy: FreezableProxy;
/** A Solana RPC URL nothing listens on: the ingester leads (and retries its passes) or stands by. */
const deadRpc = 'http://127.0.0.1:9';
let wrongChain: http.Server;
let wrongChainUrl: string;

async function daemon(roles: Role[], env: Record<string, string> = {}): Promise<Daemon> {
  const config = loadConfig({
    DATABASE_URL: proxy.connectionString,
    PORT: '0',
    SVC_METRICS_PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_ENCRYPTION_KEY: '22'.repeat(32),
    LOG_LEVEL: 'silent',
    ...env,
  });
  const started = await startDaemon({ config, logger, roles });
  daemons.push(started);
  return started;
}

async function ready(url: string): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${url}/ready`);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

let api: Daemon;
let worker: Daemon;
let ingest: Daemon;
/** Every readiness URL of the three roles: the API port of the api role, each metrics port. */
let urls: string[];

beforeAll(async () => {
  proxy = await startFreezableProxy(db.connectionString);
  // An EVM node that reports chain id 1 where polygon (137) is configured: the ingester refuses.
  wrongChain = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const call = JSON.parse(body) as { id: number; method: string };
      const answer = call.method === 'eth_chainId' ? { result: '0x1' } : { error: { code: -32601, message: 'not served' } };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...answer }));
    });
  });
  await new Promise<void>((resolve) => wrongChain.listen(0, '127.0.0.1', resolve));
  wrongChainUrl = `http://127.0.0.1:${(wrongChain.address() as AddressInfo).port}`;
  api = await daemon(['api']);
  worker = await daemon(['worker']);
  ingest = await daemon(['ingest'], { SVC_SOLANA_RPC_URL: deadRpc });
  urls = [api.url!, api.metricsUrl!, worker.metricsUrl!, ingest.metricsUrl!];
});

afterAll(async () => {
  for (const started of daemons.reverse()) await started.shutdown.kill('test done');
  await proxy?.close();
  wrongChain?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('/ready', () => {
  test('every role is ready with the database up and migrations current; the api answers on its own port too', async () => {
    for (const url of urls) {
      const { status, body } = await ready(url);
      expect(status, url).toBe(200);
      expect(body).toMatchObject({ status: 'ready', database: 'ok', migrations: { status: 'current', pending: [], unknown: [] }, reasons: [] });
    }
    expect((await ready(api.url!)).body.roles).toEqual(['api']);
    // The only ingest takes the chain's lead soon after start (standby until then; on a loaded
    // machine that can outlast the first probe).
    await expect
      .poll(async () => (await ready(ingest.metricsUrl!)).body.ingest.solana.state, { timeout: 20_000, interval: 200 })
      .toMatch(/^(leader|retrying)$/);
    // Liveness on the metrics port means what /api/v1/health means on the API port.
    const health = await fetch(`${worker.metricsUrl}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'healthy', database: 'ok' });
  });

  test('database down: every role answers 503 not_ready within the probe budget, and ready again once it is back', async () => {
    proxy.down();
    try {
      for (const url of urls) {
        const started = Date.now();
        const { status, body } = await ready(url);
        expect(status, url).toBe(503);
        expect(body).toMatchObject({ status: 'not_ready', database: 'unavailable' });
        expect(body.reasons).toContain('database unreachable or not answering within 1 s');
        expect(Date.now() - started).toBeLessThan(3_000);
      }
      expect((await fetch(`${ingest.metricsUrl}/health`)).status).toBe(503);
    } finally {
      proxy.up();
    }
    for (const url of urls) await expect.poll(async () => (await ready(url)).status, { timeout: 10_000 }).toBe(200);
  });

  test('a migration file not applied (a restored older backup) or an applied one this release does not know (a newer release ran): not ready', async () => {
    const { rows } = await db.store.query<{ version: number; name: string; checksum: string; applied_at: Date }>(
      'SELECT * FROM schema_migrations ORDER BY version DESC LIMIT 1',
    );
    const latest = rows[0]!;
    await db.store.query('DELETE FROM schema_migrations WHERE version = $1', [latest.version]);
    try {
      for (const url of urls) {
        const { status, body } = await ready(url);
        expect(status, url).toBe(503);
        expect(body.migrations).toEqual({ status: 'pending', pending: [latest.version], unknown: [] });
        expect(body.reasons[0]).toContain(`migrations not applied: ${latest.version}`);
      }
    } finally {
      await db.store.query('INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)', [
        latest.version,
        latest.name,
        latest.checksum,
        latest.applied_at,
      ]);
    }
    await db.store.query("INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'from_a_newer_release', 'x')");
    try {
      const { status, body } = await ready(api.url!);
      expect(status).toBe(503);
      expect(body.migrations).toEqual({ status: 'ahead', pending: [], unknown: [9999] });
    } finally {
      await db.store.query('DELETE FROM schema_migrations WHERE version = 9999');
    }
    for (const url of urls) expect((await ready(url)).status).toBe(200);
  });

  test('a second ingest process is a standby and is ready; an ingester that refuses its chain (wrong chain id) is not', async () => {
    const second = await daemon(['ingest'], { SVC_SOLANA_RPC_URL: deadRpc });
    // One of the two holds the Solana lock (it leads, retrying its passes against the dead RPC);
    // the other stands by. Which one depends on the earlier test, which cut the first's lock.
    const states = async () =>
      (await Promise.all([ingest, second].map(async (d) => (await ready(d.metricsUrl!)).body.ingest?.solana?.state)))
        .map((state) => (state === 'retrying' ? 'leader' : state))
        .sort();
    await expect.poll(states, { timeout: 20_000 }).toEqual(['leader', 'standby']);
    for (const process of [ingest, second]) {
      const { status, body } = await ready(process.metricsUrl!);
      expect(status).toBe(200);
      expect(body).toMatchObject({ status: 'ready', roles: ['ingest'], reasons: [] });
    }

    const refusing = await daemon(['ingest'], { SVC_POLYGON_RPC_URL: wrongChainUrl });
    await expect.poll(async () => (await ready(refusing.metricsUrl!)).status, { timeout: 10_000 }).toBe(503);
    const refused = await ready(refusing.metricsUrl!);
    expect(refused.body.ingest.polygon).toMatchObject({ state: 'refused' });
    expect(refused.body.reasons[0]).toContain('polygon: the ingester refuses to run: polygon: RPC endpoint');
    expect(refused.body.reasons[0]).toContain('reports chain id 1');
  });

  test('the metrics port answers only its routes; /ready needs no key on the API port and is not in the OpenAPI document', async () => {
    const other = await fetch(`${worker.metricsUrl}/__proto__`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: 'only GET /metrics, /ready, /health are served here' });
    const openapi = (await (await fetch(`${api.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).not.toContain('/ready');
  });

  test("the metrics port cuts slow clients off with the API's timeouts (SVC_HTTP_*), not Node's defaults", async () => {
    const quick = await daemon(['worker'], { SVC_HTTP_IDLE_TIMEOUT_MS: '600', SVC_API_DB_TIMEOUT_MS: '500' });
    const { hostname, port } = new URL(quick.metricsUrl!);
    const started = Date.now();
    // A connection that sends nothing is destroyed at the idle timeout (Node's own would wait 60 s for its headers).
    const closedAfterMs = await new Promise<number>((resolve) => {
      const socket = net.connect(Number(port), hostname);
      socket.on('error', () => {});
      socket.on('close', () => resolve(Date.now() - started));
      setTimeout(() => socket.destroy(), 8_000);
    });
    expect(closedAfterMs).toBeGreaterThanOrEqual(500);
    expect(closedAfterMs).toBeLessThan(3_000);
  });
});
