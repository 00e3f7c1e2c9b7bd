import { checkoutUrl } from '../../api/views.ts';
import { choiceExpired, getPendingChoice, type PendingChoice } from '../../payments/choices.ts';
import { assetUrl } from '../assets.ts';
import { html, safeHref } from '../html.ts';
import { page, type DashboardContext, type DashboardDeps } from '../routes.ts';
import { choiceFacts, priceFacts } from './choiceFacts.ts';
import { statusBadge, when } from './paymentParts.ts';
import type { FiatPrice } from '../../pricing/types.ts';

/**
 * The page of a session that still waits for its customer's choice among several pairs
 * (src/payments/choices.ts): nothing is reserved or payable yet, so there is no amount due, no
 * transfer and no refund, only the options, the terms and the checkout page where the customer
 * chooses. Once chosen, the id is an ordinary payment and payment.ts shows it.
 */

/** The waiting session `id` of the signed-in merchant in `livemode`, if it has not been chosen yet. */
export async function readPendingChoice(ctx: DashboardContext, id: string, livemode: boolean): Promise<PendingChoice | undefined> {
  const choice = await getPendingChoice(ctx.store, { id, merchantId: ctx.merchant.id, livemode });
  return choice && !choice.chosenAt ? choice : undefined;
}

/** The page itself. */
export function pendingChoicePage(deps: DashboardDeps, choice: PendingChoice) {
  const terms = choice.terms as PendingChoice['terms'] & { price?: FiatPrice };
  const expired = choiceExpired(choice);
  const url = checkoutUrl(deps.config.publicUrl, choice.id);
  return page(
    `Payment ${choice.id}`,
    html`<link rel="stylesheet" href="${assetUrl('payments.css')}">
<p><a href="/dashboard/payments">← All payments</a></p>
<section class="panel" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>
<dl class="facts">
<dt>Status</dt><dd class="payment-status">${statusBadge(expired ? 'expired' : 'pending')}</dd>
${terms.amount ? html`<dt>Amount</dt><dd>${terms.amount} <span class="help">(units of whichever stablecoin the customer chooses)</span></dd>` : ''}
${priceFacts(terms.price ?? null, null, null, "converted into the token at the customer's choice")}
${choiceFacts(choice.paymentOptions, null)}
${terms.description ? html`<dt>Description</dt><dd>${terms.description}</dd>` : ''}
<dt>Created</dt><dd>${when(choice.createdAt)}</dd>
<dt>Expires</dt><dd>${when(choice.expiresAt)}</dd>
<dt>Checkout page</dt><dd><a href="${safeHref(url)}">${url}</a></dd>
${Object.entries(terms.metadata ?? {}).map(([key, value]) => html`<dt>Metadata: ${key}</dt><dd>${value}</dd>`)}
</dl>
<p class="help">Nothing is reserved and nothing can be paid before the choice: the amount due, the address and the transfers appear once the customer chooses a chain and token.</p>
</section>`,
  );
}
