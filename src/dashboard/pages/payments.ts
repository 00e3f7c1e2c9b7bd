import { CURRENCIES } from '../../internal/chains.ts';
import { CHAIN_NAMES } from '../../internal/config.ts';
import { getSession, listSessions } from '../../payments/sessions.ts';
import type { Session } from '../../payments/session.ts';
import { assetUrl } from '../assets.ts';
import { errorBox } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { file, fragment, page, type DashboardContext, type DashboardPageModule } from '../routes.ts';
import {
  LIVE_POLL_SECONDS,
  PAGE_SIZE,
  STATUSES_B,
  paymentQueryString,
  paymentsTable,
  readPaymentQuery,
  sessionFilterOf,
  type PaymentQuery,
} from './paymentParts.ts';
import { CSV_MAX_ROWS, paymentsCsv } from './paymentsCsv.ts';
import { linkVisitsNote } from './homeFigures.ts';
import { countLinkVisits } from '../../payments/linkVisits.ts';
import { paymentPage } from './payment.ts';

type Page = { sessions: Session[]; hasMore: boolean; visits: number } | { error: string };

async function readPage(ctx: DashboardContext, query: PaymentQuery): Promise<Page> {
  const checked = sessionFilterOf(query, { merchantId: ctx.merchant.id, livemode: ctx.livemode });
  if ('error' in checked) return checked;
  if (query.after) {
    // A cursor must be one of this merchant's payments in this mode (as the API's startingAfter).
    if (!(await getSession(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: query.after })))
      return { error: `after ${JSON.stringify(query.after)} is not a payment of this account` };
  }
  const [rows, visits] = await Promise.all([
    listSessions(ctx.store, { ...checked.filter, limit: PAGE_SIZE + 1 }),
    // How many link visits without payment the list leaves out (in its date range), when it leaves them out.
    checked.filter.linkVisits === 'hide' ? countLinkVisits(ctx.store, checked.filter) : 0,
  ]);
  return { sessions: rows.slice(0, PAGE_SIZE), hasMore: rows.length > PAGE_SIZE, visits };
}

/**
 * The table and the pager. On the first page it polls itself every few seconds (htmx swaps the
 * whole block), so a payment that lands shows up, and moves through its states, without a reload.
 */
function resultsBlock(query: PaymentQuery, result: Page): Html {
  if ('error' in result) return html`<div id="payments-results">${errorBox(result.error)}</div>`;
  const live = !query.after;
  const last = result.sessions[result.sessions.length - 1];
  return html`<div id="payments-results"${
    live ? html` hx-get="/dashboard/payments/rows${paymentQueryString(query)}" hx-trigger="every ${LIVE_POLL_SECONDS}s" hx-swap="outerHTML"` : ''
  }>
${linkVisitsNote(result.visits, paymentQueryString(query, { visits: 'only', after: '' }))}
${paymentsTable(result.sessions)}
<nav class="pager" aria-label="Pages">
${query.after ? html`<a href="/dashboard/payments${paymentQueryString(query, { after: '' })}">First page</a>` : ''}
${result.hasMore && last ? html`<a href="/dashboard/payments${paymentQueryString(query, { after: last.id })}">Next page</a>` : ''}
</nav>
${live ? html`<p class="help live-note">This page updates by itself every ${LIVE_POLL_SECONDS} seconds.</p>` : ''}
</div>`;
}

function options(values: readonly string[], chosen: string, anyLabel: string): Html {
  return html`<option value="">${anyLabel}</option>${values.map((value) => html`<option value="${value}"${value === chosen ? html` selected` : ''}>${value}</option>`)}`;
}

/** The `visits` filter's choices (issue 27): link visits without payment are left out unless asked for. */
const VISIT_CHOICES = [
  ['', 'Left out'],
  ['all', 'Listed too'],
  ['only', 'Only these'],
] as const;

function filterForm(query: PaymentQuery): Html {
  return html`<form class="filters" method="get" action="/dashboard/payments" role="search">
  <div class="field wide"><label for="q">Search</label>
    <input id="q" name="q" type="search" value="${query.q}" placeholder="Payment id, transaction hash or metadata value" aria-describedby="q-help">
    <p class="help" id="q-help">Exact match: a payment id (ses_…), a transaction hash, or any metadata value (such as an order number).</p></div>
  <div class="field"><label for="status">Status</label><select id="status" name="status">${options(STATUSES_B, query.status, 'Any status')}</select></div>
  <div class="field"><label for="chain">Chain</label><select id="chain" name="chain">${options(CHAIN_NAMES, query.chain, 'Any chain')}</select></div>
  <div class="field"><label for="currency">Currency</label><select id="currency" name="currency">${options(CURRENCIES, query.currency, 'Any currency')}</select></div>
  <div class="field"><label for="from">From (UTC)</label><input id="from" name="from" type="date" value="${query.from}"></div>
  <div class="field"><label for="to">To (UTC)</label><input id="to" name="to" type="date" value="${query.to}"></div>
  <div class="field"><label for="visits">Link visits without payment</label><select id="visits" name="visits">${VISIT_CHOICES.map(
    ([value, label]) => html`<option value="${value}"${value === query.visits ? html` selected` : ''}>${label}</option>`,
  )}</select></div>
  <div class="actions"><button type="submit">Apply</button> <a href="/dashboard/payments">Clear</a></div>
</form>`;
}

/** Payments: list with filters and search, live first page, CSV export; a payment's page (payment.ts). */
export const paymentsPages: DashboardPageModule = (routes, deps) => {
  routes.get('/payments', { nav: 'payments' }, async (ctx, request) => {
    const query = readPaymentQuery(request.query);
    const result = await readPage(ctx, query);
    return page(
      'Payments',
      html`<link rel="stylesheet" href="${assetUrl('payments.css')}">
${filterForm(query)}
<p class="export"><a class="button secondary" href="/dashboard/payments/export.csv${paymentQueryString(query, { after: '' })}" download>Export CSV</a>
<span class="help">The filtered payments (all pages, up to ${CSV_MAX_ROWS.toLocaleString('en')} rows), amounts as exact decimal text.</span></p>
${resultsBlock(query, result)}`,
      { status: 'error' in result ? 400 : 200 },
    );
  });

  routes.get('/payments/rows', { nav: 'payments' }, async (ctx, request) => {
    const query = readPaymentQuery(request.query);
    return fragment(resultsBlock(query, await readPage(ctx, query)));
  });

  routes.get('/payments/export.csv', { nav: 'payments' }, async (ctx, request) => {
    const query = { ...readPaymentQuery(request.query), after: '' };
    const checked = sessionFilterOf(query, { merchantId: ctx.merchant.id, livemode: ctx.livemode });
    if ('error' in checked) return page('Payments', errorBox(checked.error), { status: 400 });
    const sessions: Session[] = [];
    // Pages of 1,000 on the list's index, so one export never holds one huge statement open.
    while (sessions.length < CSV_MAX_ROWS) {
      const batch = await listSessions(ctx.store, {
        ...checked.filter,
        startingAfter: sessions[sessions.length - 1]?.id,
        limit: Math.min(1000, CSV_MAX_ROWS - sessions.length),
      });
      sessions.push(...batch);
      if (batch.length < 1000) break;
    }
    const stamp = new Date().toISOString().slice(0, 10);
    return file(`payments-${ctx.livemode ? 'live' : 'test'}-${stamp}.csv`, 'text/csv; charset=utf-8', paymentsCsv(sessions));
  });

  paymentPage(routes, deps);
};
