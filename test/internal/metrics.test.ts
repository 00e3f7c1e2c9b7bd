import net from 'node:net';
import { describe, expect, test } from 'vitest';
import { Counter } from 'prom-client';
import { createMetricsRegistry, serveMetrics } from '../../src/internal/metrics.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase('metrics');

describe('serveMetrics()', () => {
  test('serves the registry at GET /metrics and nothing else', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    new Counter({ name: 'svc_test_things_total', help: 'things', registers: [registry] }).inc(3);
    const server = await serveMetrics({ registry, host: '127.0.0.1', port: 0 });
    try {
      const metrics = await fetch(`${server.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toContain('text/plain');
      expect(await metrics.text()).toContain('svc_test_things_total 3');
      const other = await fetch(`${server.url}/`);
      expect(other.status).toBe(404);
      expect(await other.json()).toEqual({ error: 'only GET /metrics is served here' });
    } finally {
      await server.close();
    }
  });
});

/**
 * A client at `url` that writes `text` one byte every 100 ms (a slowloris); resolves with what it
 * received once the server closes the connection, or with `closed: false` after 8 s.
 */
function trickleTo(url: string, text: string): Promise<{ closed: boolean; afterMs: number; received: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(Number(port), hostname);
    let received = '';
    let index = 0;
    const timer = setInterval(() => !socket.destroyed && index < text.length && socket.write(text[index++]!), 100);
    const end = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closed, afterMs: Date.now() - started, received });
    };
    const giveUp = setTimeout(() => {
      socket.removeAllListeners('close');
      socket.destroy();
      end(false);
    }, 8_000);
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => end(true));
  });
}

describe('serveMetrics() timeouts', () => {
  test('a client that trickles its headers is cut at the headers timeout with a 408 {"error"}, as on the API port', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const timeouts = { headersMs: 600, requestMs: 1_200, idleMs: 5_000, keepAliveMs: 500 };
    const server = await serveMetrics({ registry, host: '127.0.0.1', port: 0, timeouts });
    try {
      const result = await trickleTo(server.url, `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(160)}\r\n\r\n`);
      expect(result.closed).toBe(true);
      expect(result.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(result.received.split('\r\n\r\n')[1]!)).toEqual({ error: 'the request was not received in time' });
      expect(result.afterMs).toBeGreaterThanOrEqual(500);
      expect(result.afterMs).toBeLessThan(2_000);
    } finally {
      await server.close();
    }
  });

  test('an idle socket is destroyed at the idle timeout; a prompt client is served', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    const timeouts = { headersMs: 5_000, requestMs: 5_000, idleMs: 600, keepAliveMs: 500 };
    const server = await serveMetrics({ registry, host: '127.0.0.1', port: 0, timeouts });
    try {
      const idle = await trickleTo(server.url, '');
      expect(idle.closed).toBe(true);
      expect(idle.received).toBe('');
      expect(idle.afterMs).toBeLessThan(2_000);
      expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('/metrics on the API port', () => {
  test('served without a key by default; not served there once SVC_METRICS_PORT names a dedicated port', async () => {
    const { createApi } = await import('../../src/api/index.ts');
    const { loadConfig } = await import('../../src/internal/config.ts');
    const { createLogger } = await import('../../src/internal/logger.ts');
    const { createSecretBox } = await import('../../src/internal/crypto.ts');
    const store = db.store;
    const build = (env: Record<string, string>) =>
      createApi({
        store,
        logger: createLogger({ level: 'silent' }),
        metrics: createMetricsRegistry({ defaultMetrics: false }),
        config: loadConfig(env),
        box: createSecretBox(Buffer.alloc(32)),
      });
    const open = build({});
    const closed = build({ SVC_METRICS_PORT: '9464' });
    try {
      expect((await open.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
      expect((await closed.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    } finally {
      await Promise.all([open.close(), closed.close()]);
    }
  });
});
