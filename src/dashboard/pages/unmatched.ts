import { AttributeBody, transferView } from '../../api/routes/transfers.ts';
import { checkBody } from '../../api/validation.ts';
import { attributeTransfer, listUnmatchedTransfers, parseTransferId } from '../../engine/index.ts';
import { CHAIN_NAMES, type ChainName } from '../../internal/config.ts';
import { notFound } from '../../internal/errors.ts';
import { DISPLAY_DECIMALS, displayDecimal } from '../../internal/money.ts';
import { assetUrl } from '../assets.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';
import { shortAddress, txLink, when } from './paymentParts.ts';

const PAGE_SIZE = 25;

interface Refusal {
  transferId: string;
  sessionId: string;
  error: string;
}

async function renderList(ctx: DashboardContext, query: Record<string, string | undefined>, refusal?: Refusal) {
  const chain = (CHAIN_NAMES as readonly string[]).includes(query.chain ?? '') ? (query.chain as ChainName) : undefined;
  const after = query.after ? parseTransferId(query.after) : undefined;
  const rows = await listUnmatchedTransfers(ctx.store, {
    merchantId: ctx.merchant.id,
    livemode: ctx.livemode,
    chain,
    startingAfter: after,
    limit: PAGE_SIZE + 1,
  });
  const transfers = rows.slice(0, PAGE_SIZE).map(transferView);
  const last = transfers[transfers.length - 1];
  const canAttribute = ctx.can('payments.manage');
  // Only well-formed ids are echoed back (a crafted link cannot make the page say anything else).
  const attributed =
    query.attributed && parseTransferId(query.attributed) !== undefined && /^ses_[0-9A-Za-z]{1,60}$/.test(query.session ?? '')
      ? noticeBox(`Transfer ${query.attributed} now pays payment ${query.session}.`)
      : '';
  const row = (t: ReturnType<typeof transferView>): Html => html`<tr id="${t.id}">
<td><code>${t.id}</code></td>
<td>${t.currency ? displayDecimal(t.amount, DISPLAY_DECIMALS) : t.amount} ${t.currency ?? 'unknown token'}</td>
<td>${t.chain}</td>
<td class="tx">${txLink(t.chain as ChainName, t.txHash, t.livemode)}</td>
<td>${shortAddress(t.from)} → ${shortAddress(t.to)}</td>
<td>${when(new Date(t.observedAt))}</td>
<td>${
    canAttribute
      ? html`<form method="post" action="/dashboard/unmatched/${t.id}/attribute" class="inline attribute">
  ${ctx.csrfField()}
  ${refusal?.transferId === t.id ? errorBox(refusal.error) : ''}
  <label for="session-${t.id}" class="sr-only">Payment id for ${t.id}</label>
  <input id="session-${t.id}" name="sessionId" placeholder="ses_…" required maxlength="64" autocomplete="off" value="${refusal?.transferId === t.id ? refusal.sessionId : ''}">
  <button type="submit">Attribute</button>
</form>`
      : html`<span class="help">An owner can attribute it.</span>`
  }</td></tr>`;
  return page(
    'Unmatched transfers',
    html`<link rel="stylesheet" href="${assetUrl('payments.css')}">
<p class="help">Transfers into your wallets that matched no payment: a wrong amount, several payments waiting on the same wallet, or paid after the monitoring window. If you know which payment one is for, attribute it: the payment is re-evaluated at once and its events are sent.</p>
${attributed}
${refusal && !transfers.some((t) => t.id === refusal.transferId) ? errorBox(refusal.error) : ''}
<form method="get" action="/dashboard/unmatched" class="inline filters">
  <div class="field"><label for="chain">Chain</label><select id="chain" name="chain"><option value="">Any chain</option>${CHAIN_NAMES.map(
    (name) => html`<option value="${name}"${name === chain ? html` selected` : ''}>${name}</option>`,
  )}</select></div>
  <div class="actions"><button type="submit">Apply</button></div>
</form>
${
  transfers.length === 0
    ? html`<p class="empty">No unmatched transfer${chain ? ` on ${chain}` : ''}.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table class="unmatched">
<caption class="sr-only">Unmatched transfers, newest first</caption>
<thead><tr><th scope="col">Transfer</th><th scope="col">Amount</th><th scope="col">Chain</th><th scope="col">Transaction</th><th scope="col">From → to</th><th scope="col">Seen</th><th scope="col">Attribute to a payment</th></tr></thead>
<tbody>${transfers.map(row)}</tbody></table></div>`
}
<nav class="pager" aria-label="Pages">
${query.after ? html`<a href="/dashboard/unmatched${chain ? `?chain=${chain}` : ''}">First page</a>` : ''}
${rows.length > PAGE_SIZE && last ? html`<a href="/dashboard/unmatched?${new URLSearchParams({ ...(chain ? { chain } : {}), after: last.id }).toString()}">Next page</a>` : ''}
</nav>`,
    { status: refusal ? 400 : 200 },
  );
}

/** Unmatched transfers: the list and attribution to a payment (the same attributeTransfer as POST /transfers/{id}/attribution). */
export const unmatchedPage: DashboardPageModule = (routes) => {
  routes.get('/unmatched', { nav: 'unmatched' }, (ctx, request) => renderList(ctx, request.query));

  routes.post<{ id: string }>('/unmatched/:id/attribute', { nav: 'unmatched', permission: 'payments.manage' }, async (ctx, request) => {
    const transferId = request.params.id;
    const id = parseTransferId(transferId);
    if (id === undefined) throw notFound(`transfer ${transferId} not found`);
    const sessionId = field(request.body, 'sessionId');
    // The API's body schema first (an empty id is its "sessionId must not be empty"), then its domain function.
    const result = await tryForm(async () => {
      const body = checkBody<{ sessionId: string }>(AttributeBody, { sessionId });
      return attributeTransfer(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, transferId: id, sessionId: body.sessionId }, (sql, done) =>
        ctx.audit('transfer.attributed', { target: transferId, sql, details: { sessionId, sessionStatus: done.sessionStatus } }),
      );
    });
    if (!result.ok) return renderList(ctx, {}, { transferId, sessionId, error: result.error });
    return redirect(`/dashboard/unmatched?${new URLSearchParams({ attributed: transferId, session: sessionId }).toString()}`);
  });
};
