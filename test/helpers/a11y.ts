import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import type { Store } from '../../src/store/index.ts';
import { box, GENEROUS_LIMITS } from './api.ts';
import { freePort } from './anvil.ts';
import { startSandboxEngine } from './livePipeline.ts';

/** The impacts a page must not have any violation of (issues 26 and 27). */
const BLOCKING = new Set(['serious', 'critical']);

/**
 * axe-core's audit of what `page` shows now (all its rules, WCAG 2.x A/AA and best practices):
 * each serious or critical violation as `rule: target (summary)`, so a failing expectation says
 * what to fix. `label` names the page and width in the message.
 */
export async function seriousAxeViolations(page: Page, label: string): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((violation) => BLOCKING.has(violation.impact ?? ''))
    .flatMap((violation) =>
      violation.nodes.map(
        (node) => `${label}: ${violation.id} (${violation.impact}) at ${node.target.join(' ')}: ${node.failureSummary?.split('\n').join(' ')}`,
      ),
    );
}

/** Audits `page` at the desktop (1280 px) and phone (390 px) widths; the page is left at 1280 px. */
export async function seriousAxeViolationsAtBothWidths(page: Page, label: string): Promise<string[]> {
  const found: string[] = [];
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    found.push(...(await seriousAxeViolations(page, `${label} @${width}`)));
  }
  return found;
}

/** The daemon's HTTP server (API, checkout, dashboard) with the real engine and sandbox running on 20 ms simulated blocks. */
export async function startSandboxServer(store: Store): Promise<{ app: FastifyInstance; url: string; close(): Promise<void> }> {
  const port = await freePort();
  const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', SVC_SANDBOX_BLOCK_MS: '20' });
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const simulated = startSandboxEngine({ store, logger, metrics, config, blockMs: 20, intervalMs: 200 });
  const app = createHttp({ store, logger, metrics, config, box, sandbox: simulated.sandbox, rateLimits: GENEROUS_LIMITS });
  await app.listen({ port, host: '127.0.0.1' });
  return {
    app,
    url: config.publicUrl,
    close: async () => {
      await simulated.close();
      await app.close();
    },
  };
}
