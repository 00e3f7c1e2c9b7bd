import { statusB } from '../../api/views.ts';
import { formatDisplayAmount } from '../../internal/money.ts';
import type { PeriodFigures } from '../../payments/periodSummary.ts';
import { html, type Html } from '../html.ts';
import { STATUSES_B } from './paymentParts.ts';
import { LINK_VISIT_COUNT_CAP } from '../../payments/linkVisits.ts';

/**
 * Home's headline figures (issue 27): for a period the person picks, the confirmed volume and the
 * fee per currency and the payments by status, each status linking to the payments list filtered
 * to it and to the period. Periods are whole UTC days ending today, or all time.
 */

/** The periods offered: the query's `period` value, its label, and how many UTC days it spans (today included; null: all time). */
export const PERIODS = [
  { value: 'today', label: 'Today', days: 1 },
  { value: '7d', label: 'Last 7 days', days: 7 },
  { value: '30d', label: 'Last 30 days', days: 30 },
  { value: '90d', label: 'Last 90 days', days: 90 },
  { value: 'all', label: 'All time', days: null },
] as const;

/** The default period: a month, what the volume charts show too. */
const DEFAULT_PERIOD = '30d';

export interface Period {
  value: (typeof PERIODS)[number]['value'];
  label: string;
  /** Midnight UTC of the first day, or null for all time. */
  since: Date | null;
}

/** The period the query names (anything else: the default), with its first day at midnight UTC. */
export function periodOf(text: string | undefined, now: Date): Period {
  const chosen = PERIODS.find((period) => period.value === text) ?? PERIODS.find((period) => period.value === DEFAULT_PERIOD)!;
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return { value: chosen.value, label: chosen.label, since: chosen.days === null ? null : new Date(today - (chosen.days - 1) * 86_400_000) };
}

function periodForm(period: Period): Html {
  return html`<form method="get" action="/dashboard" class="inline period">
  <label for="period">Period</label>
  <select id="period" name="period">${PERIODS.map((option) => html`<option value="${option.value}"${option.value === period.value ? html` selected` : ''}>${option.label}</option>`)}</select>
  <button type="submit" class="secondary">Show</button>
</form>`;
}

function statusCounts(period: Period, figures: PeriodFigures[]): Html {
  const shown = new Map<string, number>();
  for (const currency of figures) for (const [status, count] of currency.counts) shown.set(statusB(status), (shown.get(statusB(status)) ?? 0) + count);
  const from = period.since ? `&from=${period.since.toISOString().slice(0, 10)}` : '';
  return html`<ul class="counts" id="period-counts">${STATUSES_B.map(
    (status) =>
      html`<li><a href="/dashboard/payments?status=${status}${from}"><span class="count">${shown.get(status) ?? 0}</span> <span class="badge status status-${status}">${status}</span></a></li>`,
  )}</ul>`;
}

/**
 * "N payment-link visits without payment are not counted": visits of a single-pair link that
 * never saw a transfer are not payments (src/payments/linkVisits.ts); the link lists them.
 */
export function linkVisitsNote(count: number, query: string): Html {
  if (count === 0) return html``;
  const shown = count > LINK_VISIT_COUNT_CAP ? `More than ${LINK_VISIT_COUNT_CAP.toLocaleString('en')}` : count.toLocaleString('en');
  return html`<p class="help link-visits" id="link-visits">${shown} payment-link visit${count === 1 ? '' : 's'} without payment ${count === 1 ? 'is not counted as a payment' : 'are not counted as payments'}. <a href="/dashboard/payments${query}">Show link visits without payment</a></p>`;
}

/** The headline panel: the period picker, volume and fees per currency, counts by status, and how many link visits without payment were left out. */
export function figuresBlock(period: Period, figures: PeriodFigures[], livemode: boolean, linkVisits = 0): Html {
  const total = figures.reduce((sum, currency) => sum + [...currency.counts.values()].reduce((a, b) => a + b, 0), 0);
  return html`<section class="panel wide" aria-labelledby="figures-h" id="figures">
<h2 id="figures-h">${period.label}</h2>
${periodForm(period)}
${
  figures.length === 0
    ? html`<p class="empty">No payment created in this period${livemode ? '' : ' (test data)'}.</p>`
    : html`<dl class="figures">
<div class="figure"><dt>Payments</dt><dd id="figure-payments">${String(total)}</dd></div>
${figures.map(
  (
    currency,
  ) => html`<div class="figure"><dt>Volume (${currency.currency})</dt><dd id="figure-volume-${currency.currency}">${formatDisplayAmount(currency.volume, currency.decimals)} ${currency.currency}</dd></div>
<div class="figure"><dt>Fees (${currency.currency})</dt><dd id="figure-fee-${currency.currency}">${formatDisplayAmount(currency.fee, currency.decimals)} ${currency.currency}</dd></div>`,
)}
</dl>`
}
<h3 class="sr-only">Payments by status</h3>
${statusCounts(period, figures)}
${linkVisitsNote(linkVisits, period.since ? `?visits=only&from=${period.since.toISOString().slice(0, 10)}` : '?visits=only')}
<p class="help">Volume is the confirmed money of the payments created in the period; fees are the gateway's flat fee on the confirmed ones (what <code>GET /fees</code> totals).</p>
</section>`;
}
