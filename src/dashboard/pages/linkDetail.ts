import { paymentLinkUrl } from '../../api/routes/paymentLinks.ts';
import { notFound } from '../../internal/errors.ts';
import { formatDisplayAmount } from '../../internal/money.ts';
import type { PaymentLink } from '../../payments/link.ts';
import { getPaymentLink } from '../../payments/links.ts';
import { optionsOf } from '../../payments/options.ts';
import { listSessions } from '../../payments/sessions.ts';
import { assetUrl } from '../assets.ts';
import { html, safeHref } from '../html.ts';
import { page, type DashboardDeps, type DashboardRoutes } from '../routes.ts';
import { choiceFacts, pairsText, priceFacts } from './choiceFacts.ts';
import { otherModeAnswer } from './otherMode.ts';
import { paymentsTable, when } from './paymentParts.ts';

/**
 * One payment link's page (issue 26): everything each visit's checkout gets (price or amount, the
 * pairs the customer chooses from, description, line items, wallet, URLs, metadata) and the
 * latest payments it made, each with the pair its customer chose. Read-only; the list page has
 * the actions.
 */

/** How many of the link's payments the page lists (the payments list has them all). */
const RECENT = 20;

/** The link's price for people: `49.00 EUR` (converted at each visit) or `25.00` (token units). */
export function linkPriceText(link: PaymentLink): string {
  return link.price ? `${link.price.amount} ${link.price.currency}` : formatDisplayAmount(link.amount!, link.decimals);
}

/** What the customer pays with: `USDC on base`, or `your choice of 4: USDC on base, …`. */
export function linkPairsText(link: PaymentLink): string {
  const options = optionsOf(link);
  return options.length === 1 ? pairsText(options) : `a choice of ${options.length}: ${pairsText(options)}`;
}

/** Registers `GET /dashboard/links/:id` (called by links.ts). */
export function linkDetailPage(routes: DashboardRoutes, deps: DashboardDeps): void {
  routes.get<{ id: string }>('/links/:id', { nav: 'links' }, async (ctx, request) => {
    const id = request.params.id;
    const elsewhere = await otherModeAnswer(ctx, {
      what: `payment link ${id}`,
      path: `/dashboard/links/${encodeURIComponent(id)}`,
      exists: async (livemode) => Boolean(await getPaymentLink(ctx.store, { merchantId: ctx.merchant.id, livemode, id })),
    });
    if (elsewhere) return elsewhere;
    const link = await getPaymentLink(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id });
    if (!link) throw notFound(`payment link ${id} not found`);
    const recent = await listSessions(ctx.store, {
      merchantId: ctx.merchant.id,
      livemode: ctx.livemode,
      statuses: null,
      createdGte: null,
      createdLt: null,
      paymentLinkId: link.id,
      linkVisits: 'include',
      limit: RECENT,
    });
    const options = optionsOf(link);
    const url = paymentLinkUrl(deps.config.publicUrl, link.id);
    const items = link.lineItems;
    const shown = (units: bigint) => formatDisplayAmount(units, link.decimals);
    return page(
      `Payment link ${link.id}`,
      html`<link rel="stylesheet" href="${assetUrl('payments.css')}">
<p><a href="/dashboard/links#${link.id}">← All payment links</a> · ${linkPriceText(link)} · <span class="badge ${link.active ? 'live' : 'off'}">${link.active ? 'active' : 'deactivated'}</span></p>
<section class="panel" aria-labelledby="link-h"><h2 id="link-h">What each visit gets</h2>
<dl class="facts">
<dt>URL</dt><dd><a href="${safeHref(url)}">${url}</a></dd>
${link.amount !== null ? html`<dt>Amount</dt><dd id="link-amount">${formatDisplayAmount(link.amount, link.decimals)} <span class="help">(units of whichever stablecoin the customer pays with)</span></dd>` : ''}
${priceFacts(link.price, null, null, options.length > 1 ? "converted into the token at the customer's choice" : 'converted into the token at each visit')}
${choiceFacts(options, options.length === 1 ? options[0]! : null)}
${options.length > 1 ? html`<dt>At a visit</dt><dd class="help">The customer chooses a chain and token; a payment is created only then.</dd>` : ''}
${link.description ? html`<dt>Description</dt><dd id="link-description">${link.description}</dd>` : ''}
${items ? html`<dt>Line items</dt><dd><ul id="link-items">${items.map((item) => html`<li>${item.quantity} × ${item.name}: ${shown(BigInt(item.unitAmount))} each, ${shown(BigInt(item.unitAmount) * BigInt(item.quantity))}</li>`)}</ul></dd>` : ''}
<dt>Pays to</dt><dd>${link.merchantWallet ? html`<code>${link.merchantWallet}</code>` : 'your default wallet on the chosen chain, at each visit'}</dd>
<dt>Checkout lifetime</dt><dd>${link.expiresIn} s</dd>
${link.successUrl ? html`<dt>Success URL</dt><dd><code>${link.successUrl}</code></dd>` : ''}
${link.cancelUrl ? html`<dt>Cancel URL</dt><dd><code>${link.cancelUrl}</code></dd>` : ''}
${link.webhookUrl ? html`<dt>Webhook URL</dt><dd><code>${link.webhookUrl}</code></dd>` : ''}
<dt>x402 discovery</dt><dd>${link.x402Discoverable ? 'listed' : 'not listed'}</dd>
${Object.entries(link.metadata).map(([key, value]) => html`<dt>Metadata: ${key}</dt><dd>${value}</dd>`)}
<dt>Checkouts opened</dt><dd>${link.sessionsCreated}</dd>
<dt>Created</dt><dd>${when(link.createdAt)}</dd>
</dl></section>
<section class="panel" aria-labelledby="link-payments-h"><h2 id="link-payments-h">Latest payments from this link</h2>
<p class="help">Each row's chain and currency are what its customer paid with. Visits that were never paid are listed here, not in Payments.</p>
${paymentsTable(recent)}</section>`,
    );
  });
}
