import {
  AUDIT_ACTIONS,
  auditCsv,
  listApiKeys,
  listAudit,
  listDashboardUsers,
  MAX_AUDIT_PAGE,
  type AuditEntry,
  type AuditFilter,
} from '../../accounts/index.ts';
import { badRequest } from '../../internal/errors.ts';
import { modeBadge, timeCell } from '../format.ts';
import { html, type Html } from '../html.ts';
import { file, page, type DashboardContext, type DashboardPageModule } from '../routes.ts';

/** Entries per page on screen; the CSV takes up to MAX_AUDIT_PAGE. */
const PAGE_SIZE = 50;

/** A `YYYY-MM-DD` date field as midnight UTC; `endOfDay` moves it to the next midnight (an inclusive "to"). */
function dateField(name: string, value: string | undefined, endOfDay = false): Date | undefined {
  if (!value) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) throw badRequest(`${name} must be a date (YYYY-MM-DD)`);
  const date = new Date(`${value}T00:00:00Z`);
  if (endOfDay) date.setUTCDate(date.getUTCDate() + 1);
  return date;
}

function filterOf(query: Record<string, string | undefined>): AuditFilter {
  return {
    ...(query.action ? { action: query.action } : {}),
    // "Who" is a dashboard user or an API key (their ids' prefixes tell them apart).
    ...(query.user ? (query.user.startsWith('key_') ? { apiKeyId: query.user } : { userId: query.user }) : {}),
    ...(query.from ? { from: dateField('from', query.from) } : {}),
    ...(query.to ? { to: dateField('to', query.to, true) } : {}),
    ...(query.before ? { beforeId: query.before } : {}),
  };
}

/** The query string of the current filters (for the CSV link and paging), without `before`. */
function filterQuery(query: Record<string, string | undefined>): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of ['action', 'user', 'from', 'to']) if (query[name]) params.set(name, query[name]!);
  return params;
}

/**
 * One entry. The details are shown in full (issue 27): pretty-printed JSON that wraps inside its
 * cell, never cut or scrolled; on phones the row is a card of labelled lines.
 */
function entryRow(entry: AuditEntry): Html {
  const details = Object.keys(entry.details).length ? JSON.stringify(entry.details, null, 1) : '';
  return html`<tr>
<td data-label="When">${timeCell(entry.at)}</td>
<td data-label="Who">${entry.actor}</td>
<td data-label="Action"><code>${entry.action}</code></td>
<td data-label="Target">${entry.target ? html`<code>${entry.target}</code>` : ''}</td>
<td data-label="Mode">${entry.livemode === null ? '' : modeBadge(entry.livemode)}</td>
<td data-label="IP">${entry.ip ?? ''}</td>
<td data-label="Details">${details ? html`<pre class="audit-details">${details}</pre>` : ''}</td>
</tr>`;
}

async function auditBody(ctx: DashboardContext, query: Record<string, string | undefined>): Promise<Html> {
  const entries = await listAudit(ctx.store, ctx.merchant.id, { ...filterOf(query), limit: PAGE_SIZE });
  const users = await listDashboardUsers(ctx.store, ctx.merchant.id);
  const keys = await listApiKeys(ctx.store, { merchantId: ctx.merchant.id });
  const params = filterQuery(query);
  const older = entries.length === PAGE_SIZE ? new URLSearchParams([...params, ['before', entries.at(-1)!.id]]) : undefined;
  return html`<form method="get" action="/dashboard/audit" class="inline filters">
  <div class="stack"><label for="f-action">Action</label>
  <select id="f-action" name="action"><option value="">any</option>${AUDIT_ACTIONS.map((action) => html`<option${action === query.action ? html` selected` : ''}>${action}</option>`)}</select></div>
  <div class="stack"><label for="f-user">Who</label>
  <select id="f-user" name="user"><option value="">anyone</option>${users.map((user) => html`<option value="${user.id}"${user.id === query.user ? html` selected` : ''}>${user.email}</option>`)}
  ${keys.map((key) => html`<option value="${key.id}"${key.id === query.user ? html` selected` : ''}>API key ${key.hint}</option>`)}</select></div>
  <div class="stack"><label for="f-from">From</label><input id="f-from" name="from" type="date" value="${query.from ?? ''}"></div>
  <div class="stack"><label for="f-to">To</label><input id="f-to" name="to" type="date" value="${query.to ?? ''}"></div>
  <button type="submit">Filter</button>
  <a class="button secondary" href="/dashboard/audit.csv?${params.toString()}" download>Export CSV</a>
</form>
${
  entries.length === 0
    ? html`<p class="help">No entries match.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Audit log"><table class="audit stacked">
<caption class="sr-only">Audit log, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Mode</th><th scope="col">IP</th><th scope="col">Details</th></tr></thead>
<tbody>${entries.map(entryRow)}</tbody></table></div>`
}
${older ? html`<p><a href="/dashboard/audit?${older.toString()}">Older entries</a></p>` : ''}`;
}

/** Audit log (owners): the merchant's sensitive actions with filters, and the same as CSV (up to MAX_AUDIT_PAGE rows). */
export const auditPage: DashboardPageModule = (routes) => {
  routes.get('/audit', { nav: 'audit', permission: 'audit.read' }, async (ctx, request) => page('Audit log', await auditBody(ctx, request.query)));

  routes.get('/audit.csv', { nav: 'audit', permission: 'audit.read' }, async (ctx, request) => {
    const entries = await listAudit(ctx.store, ctx.merchant.id, { ...filterOf(request.query), limit: MAX_AUDIT_PAGE });
    return file(`audit-${ctx.merchant.id}.csv`, 'text/csv; charset=utf-8', auditCsv(entries));
  });
};
