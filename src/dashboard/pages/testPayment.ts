import { badRequest } from '../../internal/errors.ts';
import { createSession } from '../../payments/sessions.ts';
import { html, type Html } from '../html.ts';
import { redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';

/**
 * "Create a test payment" in one click (issue 26): in test mode, a sandbox session of
 * {@link TEST_PAYMENT} on the merchant's sandbox (its sandbox wallet, no real chain), made by the
 * same domain function as the API's create routes; the person lands on its page, whose checkout
 * link opens the customer's view with the sandbox's "simulate payment" panel. Never in live mode:
 * the route refuses there (400) and the button is not shown.
 */

/** What the one-click test payment asks for: a round amount in cents on the chain the quick start uses. */
export const TEST_PAYMENT = { amount: '10.00', currency: 'USDC', chain: 'polygon', description: 'Test payment from the dashboard' } as const;

/** The button (a form posting with the CSRF token), for test mode and users who may use the sandbox; nothing otherwise. */
export function testPaymentButton(ctx: Pick<DashboardContext, 'livemode' | 'can' | 'csrfField'>): Html {
  if (ctx.livemode || !ctx.can('sandbox.use')) return html``;
  return html`<form method="post" action="/dashboard/payments/test" class="inline test-payment">
  ${ctx.csrfField()}<button type="submit" id="create-test-payment">Create a test payment</button>
  <span class="help">${TEST_PAYMENT.amount} ${TEST_PAYMENT.currency} on ${TEST_PAYMENT.chain}, in the sandbox: pay it from its checkout page.</span>
</form>`;
}

export const testPaymentPage: DashboardPageModule = (routes, deps) => {
  routes.post('/payments/test', { nav: 'payments', permission: 'sandbox.use' }, async (ctx) => {
    if (ctx.livemode) throw badRequest('test payments are made in test mode: switch to test data first');
    const session = await ctx.store.transaction((sql) =>
      createSession(sql, {
        merchantId: ctx.merchant.id,
        livemode: false,
        amount: TEST_PAYMENT.amount,
        currency: TEST_PAYMENT.currency,
        chain: TEST_PAYMENT.chain,
        description: TEST_PAYMENT.description,
        metadata: { createdBy: 'dashboard' },
        monitorWindowSeconds: deps.config.monitorWindowSeconds,
        feeBps: deps.config.feeBps,
      }),
    );
    return redirect(`/dashboard/payments/${session.id}?created=test`);
  });
};
