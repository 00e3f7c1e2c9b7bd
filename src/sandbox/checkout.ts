import type { FastifyInstance } from 'fastify';
import type { PaymentInstructions, SandboxPanel } from '../checkout/index.ts';
import type { Store } from '../store/index.ts';
import { escapeHtml } from '../checkout/qr.ts';
import { badRequest, notFound } from '../internal/errors.ts';
import { sandboxSessionMerchant } from '../payments/sessions.ts';
import { SANDBOX_OUTCOMES, type Sandbox, type SandboxOutcome } from './index.ts';

const OUTCOME_LABELS: Record<SandboxOutcome, string> = {
  exact: 'Pay the exact amount',
  underpaid: 'Pay half (underpaid)',
  overpaid: 'Pay 10% too much (overpaid)',
  late: 'Pay after expiry (late)',
  reorged: 'Pay, then lose it to a reorg',
  failed: 'Pay half, then expire (failed)',
  expired: 'Let it expire unpaid',
};

/** Views in which a simulated payment still makes sense (the session takes payments). */
const PAYABLE_VIEWS = new Set(['awaiting', 'underpaid', 'expired', 'failed']);

/**
 * The "simulate payment" panel of sandbox checkout pages: a plain form (no script, so the page's
 * CSP holds) that posts to `/checkout/{id}/sandbox-pay`, which pays on the simulated chain and
 * sends the payer back to the page, where the live status then moves.
 */
export const sandboxCheckoutPanel: SandboxPanel = (instructions: PaymentInstructions) => {
  const id = escapeHtml(instructions.id);
  if (!PAYABLE_VIEWS.has(instructions.view)) return `<p class="sandbox-note">Sandbox session: no real funds move.</p>`;
  const options = SANDBOX_OUTCOMES.map((outcome) => `<option value="${outcome}">${escapeHtml(OUTCOME_LABELS[outcome])}</option>`).join('');
  return `<form method="post" action="/checkout/${id}/sandbox-pay" class="sandbox-form">
<p class="sandbox-note">Sandbox session: no real funds move. Simulate what the payer does:</p>
<label for="sandbox-outcome">Outcome</label>
<select id="sandbox-outcome" name="outcome">${options}</select>
<button type="submit" id="sandbox-pay">Simulate payment</button>
</form>`;
};

/**
 * `POST /checkout/{sessionId}/sandbox-pay`, the panel's target. Public like the page itself (the
 * session id is the capability) and only for sandbox sessions: a live session is "not found".
 * Accepts the form's urlencoded body or JSON `{ "outcome": … }`; answers 303 back to the page.
 */
export function sandboxCheckoutRoutes(app: FastifyInstance, deps: { store: Store; sandbox?: Sandbox | undefined }): void {
  app.register(async (scoped) => {
    scoped.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 1024 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    scoped.post<{ Params: { sessionId: string }; Body: { outcome?: string } | undefined }>(
      '/checkout/:sessionId/sandbox-pay',
      { config: { auth: 'none' }, schema: { hide: true } as never },
      async (request, reply) => {
        const { sessionId } = request.params;
        const outcome = (request.body?.outcome ?? 'exact') as SandboxOutcome;
        if (!SANDBOX_OUTCOMES.includes(outcome)) throw badRequest(`outcome must be one of ${SANDBOX_OUTCOMES.join(', ')}`);
        const merchantId = await sandboxSessionMerchant(deps.store, sessionId);
        if (!merchantId || !deps.sandbox) throw notFound(`sandbox session ${sessionId} not found`);
        await deps.sandbox.pay({ merchantId, sessionId, outcome });
        return reply.redirect(`/checkout/${encodeURIComponent(sessionId)}`, 303);
      },
    );
  });
}
