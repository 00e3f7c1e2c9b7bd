import { describe, expect, test } from 'vitest';
import { Counter } from 'prom-client';
import { createMetricsRegistry, serveMetrics } from '../../src/internal/metrics.ts';

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
