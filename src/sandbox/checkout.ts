import type { FastifyInstance } from 'fastify';
import { sendMessagePage, wantsPage, type PaymentInstructions, type SandboxPanel } from '../checkout/index.ts';
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

/** Views in which a simulated payment still makes sense (the session takes payments), besides any view with something left to pay. */
const SIMULATION_VIEWS = ['awaiting', 'underpaid', 'expired', 'failed'] as const;

/**
 * The "simulate payment" panel of sandbox checkout pages: a plain form (no script, so the page's
 * CSP holds) that posts to `/checkout/{id}/sandbox-pay`, which pays on the simulated chain and
 * sends the payer back to the page, where the live status then moves.
 *
 * The form is always in the page and the page's script shows it whenever a simulation makes sense
 * (`data-views` plus `data-or-payable`): after "Pay half" the page comes back while the half
 * confirms (view `detected`, still payable), and the form stays, so the rest can be simulated
 * without a reload. Once something arrived, "exact" is "pay the rest" and "expired" (which needs
 * an unpaid session) is not offered.
 */
export const sandboxCheckoutPanel: SandboxPanel = (instructions: PaymentInstructions) => {
  const id = escapeHtml(instructions.id);
  const shown = (SIMULATION_VIEWS as readonly string[]).includes(instructions.view) || instructions.payable;
  const started = instructions.amountReceivedBaseUnits !== '0' || instructions.amountPendingBaseUnits !== '0';
  const options = SANDBOX_OUTCOMES.filter((outcome) => !(started && outcome === 'expired'))
    .map((outcome) => {
      const label = started && outcome === 'exact' ? `Pay the rest (${instructions.amountRemaining} ${instructions.currency})` : OUTCOME_LABELS[outcome];
      return `<option value="${outcome}">${escapeHtml(label)}</option>`;
    })
    .join('');
  return `<p class="sandbox-note">Sandbox session: no real funds move.</p>
<form method="post" action="/checkout/${id}/sandbox-pay" class="sandbox-form" data-views="${SIMULATION_VIEWS.join(' ')}" data-or-payable${shown ? '' : ' hidden'}>
<p class="sandbox-note">Simulate what the payer does:</p>
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
export function sandboxCheckoutRoutes(
  app: FastifyInstance,
  deps: {
    store: Store;
    sandbox?: Sandbox | undefined;
    /** The HTTP layer's error-to-status table (api/httpErrors' refusalAnswer, wired by http.ts): a refusal's status and message. */
    refusalOf?: (error: unknown) => { status: number; body: { error: string } } | undefined;
  },
): void {
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
        try {
          const merchantId = await sandboxSessionMerchant(deps.store, sessionId);
          if (!merchantId || !deps.sandbox) throw notFound(`sandbox session ${sessionId} not found`);
          await deps.sandbox.pay({ merchantId, sessionId, outcome });
        } catch (error) {
          // The panel's form is posted by a browser: it gets a page that says why, not JSON.
          const answer = deps.refusalOf?.(error);
          if (!answer || !wantsPage(request.headers.accept)) throw error;
          return sendMessagePage(reply, { status: answer.status, title: 'Simulation refused', text: `${answer.body.error}.`, https: false });
        }
        return reply.redirect(`/checkout/${encodeURIComponent(sessionId)}`, 303);
      },
    );
  });
}
