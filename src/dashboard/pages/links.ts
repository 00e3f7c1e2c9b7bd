import type { Static } from 'typebox';
import { checkDashboardWalletChoice } from '../../accounts/index.ts';
import { CreatePaymentLinkBody, createPaymentLinkFromBody, paymentLinkUrl } from '../../api/routes/paymentLinks.ts';
import { checkBody } from '../../api/validation.ts';
import { qrSvg } from '../../checkout/qr.ts';
import { CURRENCIES } from '../../internal/chains.ts';
import { CHAIN_NAMES } from '../../internal/config.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import { formatAmount, formatDisplayAmount } from '../../internal/money.ts';
import type { PaymentLink } from '../../payments/link.ts';
import { getPaymentLink, listPaymentLinks, setPaymentLinkActive, setPaymentLinkDiscoverable } from '../../payments/links.ts';
import { assetUrl } from '../assets.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardDeps, type DashboardPageModule } from '../routes.ts';
import { when } from './paymentParts.ts';

const PAGE_SIZE = 25;

const FORM_FIELDS = ['amount', 'currency', 'chain', 'merchantWallet', 'expiresIn', 'successUrl', 'webhookUrl', 'metadata', 'x402Discoverable'] as const;
type LinkForm = Record<(typeof FORM_FIELDS)[number], string>;

/**
 * The form's text as `POST /payment-links`'s JSON body: empty fields left out (the API's
 * defaults apply), `expiresIn` a number when it is digits (else the text, which the schema
 * refuses with the API's message), metadata from `key=value` lines.
 */
export function linkBodyOf(form: LinkForm): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const name of ['amount', 'currency', 'chain', 'merchantWallet', 'successUrl', 'webhookUrl'] as const) if (form[name]) body[name] = form[name];
  if (form.x402Discoverable) body.x402Discoverable = true;
  if (form.expiresIn) body.expiresIn = /^\d{1,9}$/.test(form.expiresIn) ? Number(form.expiresIn) : form.expiresIn;
  if (form.metadata) {
    const metadata: Record<string, string> = Object.create(null);
    for (const [index, line] of form.metadata.split(/\r?\n/).entries()) {
      if (!line.trim()) continue;
      const at = line.indexOf('=');
      if (at < 0) throw badRequest(`metadata line ${index + 1} must be key=value`);
      metadata[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    body.metadata = { ...metadata };
  }
  return body;
}

/** The link's QR code as a data: URL of an SVG (made on the server by the checkout's cached qrSvg; the CSP allows data: images). */
async function qrDataUrl(url: string): Promise<string> {
  const svg = await qrSvg(url, { label: 'Payment link QR code' });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

async function linkCard(ctx: DashboardContext, deps: DashboardDeps, link: PaymentLink, highlight: boolean): Promise<Html> {
  const url = paymentLinkUrl(deps.config.publicUrl, link.id);
  const canManage = ctx.can('links.manage');
  return html`<li class="link-card${highlight ? ' created' : ''}" id="${link.id}">
<div class="link-head"><strong>${link.price ? `${link.price.amount} ${link.price.currency} in ${link.currency}` : `${formatDisplayAmount(link.amount!, link.decimals)} ${link.currency}`}</strong> on ${link.chain}
<span class="badge ${link.active ? 'live' : 'off'}">${link.active ? 'active' : 'deactivated'}</span>${
    link.x402Discoverable ? html` <span class="badge" title="Listed by GET /discovery/resources">x402 discovery</span>` : ''
  }</div>
<p class="link-url"><code id="url-${link.id}">${url}</code> <button type="button" class="secondary copy" data-copy="url-${link.id}">Copy URL<span class="sr-only"> of ${link.id}</span></button></p>
<p class="help"><code>${link.id}</code> · ${link.sessionsCreated} checkout${link.sessionsCreated === 1 ? '' : 's'} opened · created ${when(link.createdAt)}${
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

function options(values: readonly string[], chosen: string): Html {
  return html`${values.map((value) => html`<option value="${value}"${value === chosen ? html` selected` : ''}>${value}</option>`)}`;
}

function createForm(ctx: DashboardContext, values: Partial<LinkForm>, error?: string): Html {
  return html`<form method="post" action="/dashboard/links" class="stack" id="create-link">
<h2>Create a payment link</h2>
${error ? errorBox(error) : ''}
${ctx.csrfField()}
<label for="link-amount">Amount</label>
<input id="link-amount" name="amount" inputmode="decimal" autocomplete="off" required value="${values.amount ?? ''}" aria-describedby="link-amount-help">
<p class="help" id="link-amount-help">Decimal text such as 25.00.</p>
<label for="link-currency">Currency</label>
<select id="link-currency" name="currency">${options(CURRENCIES, values.currency ?? 'USDC')}</select>
<label for="link-chain">Chain</label>
<select id="link-chain" name="chain">${options(CHAIN_NAMES, values.chain ?? 'base')}</select>
<label for="link-wallet">Receiving wallet (empty: your default wallet on the chain)</label>
<input id="link-wallet" name="merchantWallet" autocomplete="off" value="${values.merchantWallet ?? ''}">
<label for="link-expires">Checkout lifetime in seconds (empty: 3600)</label>
<input id="link-expires" name="expiresIn" inputmode="numeric" autocomplete="off" value="${values.expiresIn ?? ''}">
<label for="link-success">Success URL (optional)</label>
<input id="link-success" name="successUrl" type="url" autocomplete="off" value="${values.successUrl ?? ''}">
<label for="link-webhook">Webhook URL (optional)</label>
<input id="link-webhook" name="webhookUrl" type="url" autocomplete="off" value="${values.webhookUrl ?? ''}">
<label for="link-metadata">Metadata (one key=value a line, optional)</label>
<textarea id="link-metadata" name="metadata" rows="3">${values.metadata ?? ''}</textarea>
<label><input type="checkbox" name="x402Discoverable" value="on"${values.x402Discoverable ? html` checked` : ''} aria-describedby="link-discoverable-help"> List in x402 discovery</label>
<p class="help" id="link-discoverable-help">Agents find the link at /discovery/resources (live links, where x402 is enabled): its price, wallet, description and your name become public.</p>
<button type="submit">Create link</button>
</form>`;
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
<div>${ctx.can('links.manage') ? createForm(ctx, form?.values ?? {}, form?.error) : html`<p class="help">Only owners and developers can create links.</p>`}</div>
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

  routes.post('/links', { nav: 'links', permission: 'links.manage' }, async (ctx, request) => {
    const values = Object.fromEntries(FORM_FIELDS.map((name) => [name, field(request.body, name)])) as LinkForm;
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
            currency: link.currency,
            chain: link.chain,
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
