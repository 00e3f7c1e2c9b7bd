import type { Static } from 'typebox';
import { checkDashboardWalletChoice } from '../../accounts/index.ts';
import { CreatePaymentLinkBody, createPaymentLinkFromBody, paymentLinkUrl } from '../../api/routes/paymentLinks.ts';
import { checkBody } from '../../api/validation.ts';
import { qrSvg } from '../../checkout/qr.ts';
import { liveChains } from '../../internal/config.ts';
import { notFound } from '../../internal/errors.ts';
import { formatAmount } from '../../internal/money.ts';
import type { PaymentLink } from '../../payments/link.ts';
import { optionsOf } from '../../payments/options.ts';
import { getPaymentLink, listPaymentLinks, setPaymentLinkActive, setPaymentLinkDiscoverable } from '../../payments/links.ts';
import { assetUrl } from '../assets.ts';
import { noticeBox, tryForm } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardDeps, type DashboardPageModule } from '../routes.ts';
import { when } from './paymentParts.ts';
import { createLinkForm, linkBodyOf, readLinkForm, receivablePairs, type LinkForm } from './linkForm.ts';
import { linkDetailPage, linkPriceText, linkPairsText } from './linkDetail.ts';

const PAGE_SIZE = 25;

/** The link's QR code as a data: URL of an SVG (made on the server by the checkout's cached qrSvg; the CSP allows data: images). */
async function qrDataUrl(url: string): Promise<string> {
  const svg = await qrSvg(url, { label: 'Payment link QR code' });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

async function linkCard(ctx: DashboardContext, deps: DashboardDeps, link: PaymentLink, highlight: boolean): Promise<Html> {
  const url = paymentLinkUrl(deps.config.publicUrl, link.id);
  const canManage = ctx.can('links.manage');
  return html`<li class="link-card${highlight ? ' created' : ''}" id="${link.id}">
<div class="link-head"><strong>${linkPriceText(link)}</strong> in ${linkPairsText(link)}
<span class="badge ${link.active ? 'live' : 'off'}">${link.active ? 'active' : 'deactivated'}</span>${
    link.x402Discoverable ? html` <span class="badge" title="Listed by GET /discovery/resources">x402 discovery</span>` : ''
  }</div>
<p class="link-url"><code id="url-${link.id}">${url}</code> <button type="button" class="secondary copy" data-copy="url-${link.id}">Copy URL<span class="sr-only"> of ${link.id}</span></button></p>
<p class="help"><a href="/dashboard/links/${link.id}"><code>${link.id}</code><span class="sr-only"> details</span></a> · ${link.sessionsCreated} checkout${link.sessionsCreated === 1 ? '' : 's'} opened · created ${when(link.createdAt)}${
    link.merchantWallet ? html` · pays to <code>${link.merchantWallet}</code>` : ' · pays to your default wallet'
  }</p>
<details${highlight ? html` open` : ''}><summary>QR code</summary><img class="qr" src="${await qrDataUrl(url)}" alt="QR code of ${url}" width="192" height="192"></details>
${
  canManage
    ? html`<form method="post" action="/dashboard/links/${link.id}/${link.active ? 'deactivate' : 'activate'}"${
        link.active ? html` data-confirm="Deactivate this link? Visits then get 410 Gone."` : ''
      }>${ctx.csrfField()}<button type="submit" class="${link.active ? 'danger' : 'secondary'}">${link.active ? 'Deactivate' : 'Reactivate'}<span class="sr-only"> ${link.id}</span></button></form>`
    : ''
}
${
  canManage
    ? html`<form method="post" action="/dashboard/links/${link.id}/${link.x402Discoverable ? 'undiscoverable' : 'discoverable'}">${ctx.csrfField()}<button type="submit" class="secondary">${
        link.x402Discoverable ? 'Remove from x402 discovery' : 'List in x402 discovery'
      }<span class="sr-only"> ${link.id}</span></button></form>`
    : ''
}
</li>`;
}

async function renderLinks(
  ctx: DashboardContext,
  deps: DashboardDeps,
  query: Record<string, string | undefined>,
  form?: { values: Partial<LinkForm>; error: string; status: number },
) {
  const after =
    query.after && (await getPaymentLink(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: query.after })) ? query.after : undefined;
  const rows = await listPaymentLinks(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, startingAfter: after, limit: PAGE_SIZE + 1 });
  const links = rows.slice(0, PAGE_SIZE);
  const created = links.find((link) => link.id === query.created);
  const cards = await Promise.all(links.map((link) => linkCard(ctx, deps, link, link.id === created?.id)));
  return page(
    'Payment links',
    html`<link rel="stylesheet" href="${assetUrl('payments.css')}">
<p class="help">A payment link is a reusable price: each visit opens a fresh checkout for it. Share the URL or the QR code.</p>
${created ? noticeBox(`Payment link ${created.id} created. Copy its URL or show its QR code below.`) : ''}
<div class="links-layout">
<div>${ctx.can('links.manage') ? createLinkForm(ctx, await receivablePairs(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, liveChains: liveChains(deps.config) }), form?.values ?? {}, form?.error) : html`<p class="help">Only owners and developers can create links.</p>`}</div>
<section aria-labelledby="your-links-h"><h2 id="your-links-h">Your links</h2>
${links.length ? html`<ul class="links">${cards}</ul>` : html`<p class="empty">No payment link yet.</p>`}
<nav class="pager" aria-label="Pages">
${after ? html`<a href="/dashboard/links">First page</a>` : ''}
${rows.length > PAGE_SIZE ? html`<a href="/dashboard/links?after=${links[links.length - 1]!.id}">Next page</a>` : ''}
</nav></section>
</div>`,
    { status: form?.status ?? 200 },
  );
}

/** Payment links: list, create (POST /payment-links's schema and function), deactivate/reactivate, copy, QR. */
export const linksPage: DashboardPageModule = (routes, deps) => {
  routes.get('/links', { nav: 'links' }, (ctx, request) => renderLinks(ctx, deps, request.query));
  linkDetailPage(routes, deps);

  routes.post('/links', { nav: 'links', permission: 'links.manage' }, async (ctx, request) => {
    const values = readLinkForm(request.body);
    // A live link that names its own wallet or webhook URL routes money: the password again, as for wallets and webhooks.
    if (ctx.livemode && (values.merchantWallet || values.webhookUrl)) ctx.requireRecentPassword();
    // The API's body schema (same messages), then the API's create function.
    const result = await tryForm(async () => {
      const body = checkBody<Static<typeof CreatePaymentLinkBody>>(CreatePaymentLinkBody, linkBodyOf(values));
      return createPaymentLinkFromBody(deps, { merchantId: ctx.merchant.id, livemode: ctx.livemode, body }, async (sql, link) => {
        // After the create, so the address is the canonical one the link stores; a refusal rolls it back.
        await checkDashboardWalletChoice(sql, {
          role: ctx.user.role,
          livemode: link.livemode,
          merchantId: ctx.merchant.id,
          chain: link.chain,
          address: link.merchantWallet,
        });
        await ctx.audit('payment_link.created', {
          target: link.id,
          sql,
          details: {
            amount: link.amount === null ? null : formatAmount(link.amount, link.decimals),
            price: link.price,
            // As the API's entry: one pair, or null pairs and the options the customer chooses from.
            currency: link.paymentOptions ? null : link.currency,
            chain: link.paymentOptions ? null : link.chain,
            paymentOptions: optionsOf(link),
            // Where its money goes (null: the chain's default wallet at each visit) and who hears of it.
            merchantWallet: link.merchantWallet,
            webhookUrl: link.webhookUrl,
            x402Discoverable: link.x402Discoverable,
          },
        });
        return link;
      });
    });
    if (!result.ok) return renderLinks(ctx, deps, {}, { values, error: result.error, status: result.status });
    return redirect(`/dashboard/links?created=${result.value.id}#${result.value.id}`);
  });

  for (const [action, active] of [
    ['deactivate', false],
    ['activate', true],
  ] as const) {
    routes.post<{ id: string }>(`/links/:id/${action}`, { nav: 'links', permission: 'links.manage' }, async (ctx, request) => {
      const link = await ctx.store.transaction(async (sql) => {
        const changed = await setPaymentLinkActive(sql, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: request.params.id, active });
        if (!changed) throw notFound(`payment link ${request.params.id} not found`);
        if (!active) await ctx.audit('payment_link.deactivated', { target: changed.id, sql });
        return changed;
      });
      return redirect(`/dashboard/links#${link.id}`);
    });
  }

  for (const [action, discoverable] of [
    ['discoverable', true],
    ['undiscoverable', false],
  ] as const) {
    routes.post<{ id: string }>(`/links/:id/${action}`, { nav: 'links', permission: 'links.manage' }, async (ctx, request) => {
      const target = { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: request.params.id };
      const link = await ctx.store.transaction(async (sql) => {
        const before = await getPaymentLink(sql, target);
        if (!before) throw notFound(`payment link ${request.params.id} not found`);
        const changed = (await setPaymentLinkDiscoverable(sql, { ...target, discoverable }))!;
        // As the API: publishing a link or withdrawing it is recorded when it changes.
        if (before.x402Discoverable !== discoverable) {
          await ctx.audit('payment_link.x402_discoverable_changed', { target: changed.id, sql, details: { x402Discoverable: discoverable } });
        }
        return changed;
      });
      return redirect(`/dashboard/links#${link.id}`);
    });
  }
};
