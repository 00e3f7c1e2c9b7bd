import { statusB } from '../../api/views.ts';
import { listenerHealth, type ListenerHealth } from '../../ingest/listenerHealth.ts';
import { DISPLAY_DECIMALS, displayDecimal, formatAmount } from '../../internal/money.ts';
import { dailyVolume, listSessions, type DailyVolume } from '../../payments/sessions.ts';
import { periodFigures } from '../../payments/periodSummary.ts';
import { countLinkVisits } from '../../payments/linkVisits.ts';
import { figuresBlock, periodOf } from './homeFigures.ts';
import { testPaymentButton } from './testPayment.ts';
import { assetUrl } from '../assets.ts';
import { html, type Html } from '../html.ts';
import { page, type DashboardPageModule } from '../routes.ts';
import { paymentsTable } from './paymentParts.ts';

/** Days the volume charts cover, today included. */
export const CHART_DAYS = 30;

/**
 * One chart per currency: x the UTC days, one series per chain, y the confirmed money of payments
 * created that day as decimal text (made from base units here; the browser turns it into a
 * number only to draw it). Read by assets/payments.js from the element's data attribute.
 */
export interface VolumeChart {
  currency: string;
  days: string[];
  series: { chain: string; values: string[] }[];
}

export function volumeCharts(rows: DailyVolume[], today: Date): VolumeChart[] {
  const days: string[] = [];
  for (let back = CHART_DAYS - 1; back >= 0; back--) days.push(new Date(today.getTime() - back * 86_400_000).toISOString().slice(0, 10));
  const charts: VolumeChart[] = [];
  for (const currency of [...new Set(rows.map((row) => row.currency))].sort()) {
    const ofCurrency = rows.filter((row) => row.currency === currency);
    const series = [...new Set(ofCurrency.map((row) => row.chain))].sort().map((chain) => {
      const byDay = new Map<string, bigint>();
      let decimals = 6;
      for (const row of ofCurrency.filter((r) => r.chain === chain)) {
        // One chain and currency has one decimals value (chains.ts checks it), so sums add up.
        decimals = row.decimals;
        byDay.set(row.day, (byDay.get(row.day) ?? 0n) + row.amount);
      }
      return { chain, values: days.map((day) => formatAmount(byDay.get(day) ?? 0n, decimals)) };
    });
    charts.push({ currency, days, series });
  }
  return charts;
}

function chartBlock(chart: VolumeChart): Html {
  const titleId = `volume-${chart.currency}-title`;
  return html`<figure class="chart" aria-labelledby="${titleId}">
<figcaption id="${titleId}">${chart.currency} received per day (confirmed, by day of creation, UTC)</figcaption>
<div class="volume-chart" data-volume="${JSON.stringify(chart)}" role="img" aria-label="Chart of ${chart.currency} received per day by chain; the table below has the same figures"></div>
<details><summary>Figures as a table</summary><div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table>
<thead><tr><th scope="col">Day</th>${chart.series.map((series) => html`<th scope="col">${series.chain}</th>`)}</tr></thead>
<tbody>${chart.days
    .map((day, index) => ({ day, index }))
    .filter(({ index }) => chart.series.some((series) => series.values[index] !== '0'))
    .map(
      ({ day, index }) =>
        html`<tr><th scope="row">${day}</th>${chart.series.map((series) => html`<td>${displayDecimal(series.values[index]!, DISPLAY_DECIMALS)}</td>`)}</tr>`,
    )}</tbody>
</table></div></details>
</figure>`;
}

function healthBlock(health: ListenerHealth): Html {
  return html`<p>Overall: <span class="badge health-${health.status}">${health.status}</span></p>
${health.reasons.length ? html`<ul class="reasons">${health.reasons.map((reason) => html`<li>${reason}</li>`)}</ul>` : ''}
<div class="table-wrap" tabindex="0" role="region" aria-label="Chain listeners"><table class="health stacked">
<thead><tr><th scope="col">Chain</th><th scope="col">Listener</th><th scope="col">Head</th><th scope="col">Processed</th><th scope="col">Lag</th></tr></thead>
<tbody>${health.chains.map(
    (chain) => html`<tr><th scope="row">${chain.chain}</th><td data-label="Listener"><span class="badge health-${chain.status}">${chain.status}</span></td>
<td data-label="Head">${chain.headBlock ?? '—'}</td><td data-label="Processed">${chain.processedBlock ?? '—'}</td><td data-label="Lag">${chain.lagSeconds === null ? '—' : `${chain.lagSeconds} s`}</td></tr>`,
  )}</tbody></table></div>`;
}

/** Home: headline figures of the chosen period, volume charts, chain listener health (GET /status's function), recent payments. */
export const homePage: DashboardPageModule = (routes, deps) => {
  routes.get('/', { nav: 'home' }, async (ctx, request) => {
    const scope = { merchantId: ctx.merchant.id, livemode: ctx.livemode };
    const now = new Date();
    const period = periodOf(request.query.period, now);
    const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (CHART_DAYS - 1) * 86_400_000);
    const [volume, figures, health, recent, visits] = await Promise.all([
      dailyVolume(ctx.store, { ...scope, since }),
      periodFigures(ctx.store, { ...scope, since: period.since }),
      listenerHealth(ctx.store, { config: deps.config, livemode: ctx.livemode, now }),
      listSessions(ctx.store, { ...scope, statuses: null, createdGte: null, createdLt: null, linkVisits: 'hide', limit: 8 }),
      countLinkVisits(ctx.store, { ...scope, createdGte: period.since }),
    ]);
    const charts = volumeCharts(volume, now);
    return page(
      'Home',
      html`<link rel="stylesheet" href="${assetUrl('uplot.min.css')}"><link rel="stylesheet" href="${assetUrl('payments.css')}">
<script src="${assetUrl('uplot.min.js')}" defer></script><script src="${assetUrl('payments.js')}" defer></script>
${testPaymentButton(ctx)}
<div class="home-grid">
${figuresBlock(period, figures, ctx.livemode, visits)}
<section class="panel wide" aria-labelledby="volume-h"><h2 id="volume-h">Volume, last ${CHART_DAYS} days</h2>
${charts.length ? charts.map(chartBlock) : html`<p class="empty">No confirmed payment in the last ${CHART_DAYS} days${ctx.livemode ? '' : ' (test data)'}.</p>`}
</section>
<section class="panel" aria-labelledby="health-h"><h2 id="health-h">Chain listeners</h2>${healthBlock(health)}</section>
<section class="panel wide" aria-labelledby="recent-h"><h2 id="recent-h">Recent payments</h2>${paymentsTable(recent)}<p><a href="/dashboard/payments">All payments</a></p></section>
</div>`,
    );
  });
};
