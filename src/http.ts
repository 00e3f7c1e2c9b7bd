import type { FastifyInstance } from 'fastify';
import { createApi, type CreateApiParams, type Surface } from './api/index.ts';
import { refusalAnswer } from './api/httpErrors.ts';
import { registerCheckout } from './checkout/index.ts';
import { liveChains } from './internal/config.ts';
import { registerDashboard } from './dashboard/index.ts';
import { sandboxCheckoutPanel, sandboxCheckoutRoutes } from './sandbox/checkout.ts';

/**
 * The hosted checkout, with what the stages above it add: the sandbox's "simulate payment" panel
 * and routes, and each session's x402 resource where the x402 stage can take its payment.
 */
export const checkoutSurface: Surface = (app, deps) => {
  registerCheckout(app, {
    ...deps,
    sandboxPanel: deps.sandbox ? sandboxCheckoutPanel : undefined,
    x402UrlOf: (session) => deps.x402?.urlOf(session) ?? null,
    choice: {
      config: { monitorWindowSeconds: deps.config.monitorWindowSeconds, feeBps: deps.config.feeBps, liveChains: liveChains(deps.config) },
      x402Of: (choice) => ({ url: deps.x402?.pendingUrlOf(choice) ?? null, pairs: deps.x402?.pendingPairsOf(choice) ?? [] }),
    },
  });
  sandboxCheckoutRoutes(app, { ...deps, refusalOf: refusalAnswer });
};

/** The merchant dashboard under /dashboard. */
export const dashboardSurface: Surface = (app, deps) => registerDashboard(app, deps);

/**
 * The daemon's HTTP server: the API (Interface A and B, x402, public payment-link URLs, /docs,
 * /metrics) with the checkout and the dashboard wired in. The wiring lives here, above every
 * stage, so that the API does not import the dashboard and the checkout imports neither x402 nor
 * the sandbox (test/sourceLayout.test.ts keeps every import pointing down).
 */
export function createHttp(params: Omit<CreateApiParams, 'surfaces'>): FastifyInstance {
  return createApi({ ...params, surfaces: [checkoutSurface, dashboardSurface] });
}
