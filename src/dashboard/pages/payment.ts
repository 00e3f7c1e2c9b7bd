import type { Static } from 'typebox';
import { CreateRefundBody } from '../../api/routes/refunds.ts';
import { checkBody } from '../../api/validation.ts';
import { checkoutUrl } from '../../api/views.ts';
import { listDeliveries, listEvents, type DeliveryRecord, type EventRecord } from '../../delivery/index.ts';
import { listSessionTransfers, transferPublicId, type TransferRow } from '../../engine/index.ts';
import { loadChains } from '../../internal/chains.ts';
import { notFound } from '../../internal/errors.ts';
import { formatDisplayAmount } from '../../internal/money.ts';
import { listRefunds, requestRefund } from '../../payments/refunds.ts';
import type { Session } from '../../payments/session.ts';
import { getSession } from '../../payments/sessions.ts';
import { assetUrl } from '../assets.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { html, safeHref, type Html } from '../html.ts';
import { fragment, page, redirect, type DashboardContext, type DashboardDeps, type DashboardRoutes } from '../routes.ts';
import { otherModeAnswer } from './otherMode.ts';
import { choiceFacts, priceFacts } from './choiceFacts.ts';
import { pendingChoicePage, readPendingChoice } from './pendingPayment.ts';
import { optionsOf } from '../../payments/options.ts';
import { LIVE_POLL_SECONDS, money, shortAddress, statusBadge, txLink, when } from './paymentParts.ts';

/**
 * One payment's page: what was asked and received, confirmations against the chain's rule, the
 * timeline (each state it reached and the event that reported it, with that event's webhook
 * deliveries), the transfers that paid it, its refunds and the refund request form. The live
 * part polls itself until the payment can change no more.
 */

/** htmx stops polling on this status (its documented "stop polling" code). */
const HTMX_STOP_POLLING = 286;

/** States after which nothing changes the payment any more, once its monitoring window is over too. */
const FINAL = new Set(['settled', 'expired', 'failed']);

interface PaymentDetail {
  session: Session;
  events: EventRecord[];
  deliveries: Map<string, DeliveryRecord[]>;
  transfers: TransferRow[];
}

async function readDetail(ctx: DashboardContext, id: string): Promise<PaymentDetail> {
  const owner = { merchantId: ctx.merchant.id, livemode: ctx.livemode };
  const session = await getSession(ctx.store, { ...owner, id });
  if (!session) throw notFound(`payment ${id} not found`);
  const [events, transfers] = await Promise.all([
    listEvents(ctx.store, owner, { paymentId: id, limit: 200 }),
    listSessionTransfers(ctx.store, { sessionId: id, livemode: ctx.livemode }),
  ]);
  const deliveries = new Map<string, DeliveryRecord[]>();
  for (const event of events.data) deliveries.set(event.id, await listDeliveries(ctx.store, owner, { eventId: event.id, limit: 20 }));
  return { session, events: events.data.reverse(), deliveries, transfers };
}

function isFinal(session: Session): boolean {
  return FINAL.has(session.status) && (session.status === 'settled' || session.monitorUntil.getTime() < Date.now());
}

function confirmationsBlock(session: Session): Html {
  const chain = loadChains()[session.chain];
  const required = session.requiredConfirmations;
  const shown = Math.min(session.confirmations, required);
  const rule =
    typeof chain.confirmations.confirmed === 'number'
      ? `${required} blocks on ${session.chain}`
      : `the ${chain.confirmations.confirmed} commitment on ${session.chain} (counted as ${required} slots)`;
  return html`<div class="confirmations">
<p><strong>Confirmations:</strong> <span class="confirmation-count">${session.confirmations} (${required} required)</span> <span class="help">rule: ${rule}</span></p>
<progress max="${required}" value="${shown}" aria-label="Confirmations, ${shown} of ${required}">${shown} of ${required}</progress>
</div>`;
}

function deliveryList(deliveries: DeliveryRecord[]): Html {
  if (deliveries.length === 0) return html`<p class="help">No webhook delivery (no endpoint or webhookUrl takes this event).</p>`;
  return html`<ul class="deliveries">${deliveries.map(
    (delivery) => html`<li><span class="badge delivery-${delivery.status}">${delivery.status}</span> to <code>${delivery.url}</code>,
${delivery.attemptCount} attempt${delivery.attemptCount === 1 ? '' : 's'}${delivery.lastResponseStatus ? html`, last answer HTTP ${delivery.lastResponseStatus}` : ''}${
      delivery.lastError ? html`, ${delivery.lastError}` : ''
    }${delivery.endpointId ? html` · <a href="/dashboard/webhooks">webhooks page</a>` : ''}</li>`,
  )}</ul>`;
}

/** Each state the payment reached, oldest first: created (Interface B: pending), then one step per event. */
function timeline(detail: PaymentDetail): Html {
  const { session, events, deliveries } = detail;
  const steps: Html[] = [
    html`<li class="step"><span class="step-status">${statusBadge('created')}</span> <strong>Created</strong> <time datetime="${session.createdAt.toISOString()}">${when(session.createdAt)}</time>
<p class="help">A new payment is pending until money for it is seen on chain.</p></li>`,
  ];
  for (const event of events) {
    const status = typeof event.data.status === 'string' ? event.data.status : null;
    steps.push(html`<li class="step"><span class="step-status">${status ? statusBadge(status) : ''}</span> <strong>${event.event}</strong> <time datetime="${event.createdAt.toISOString()}">${when(event.createdAt)}</time>
<details data-keep-open="${event.id}"><summary>Webhook deliveries of ${event.id}</summary>${deliveryList(deliveries.get(event.id) ?? [])}</details></li>`);
  }
  return html`<ol class="timeline">${steps}</ol>`;
}

function transfersTable(detail: PaymentDetail): Html {
  const { session, transfers } = detail;
  if (transfers.length === 0) return html`<p class="help">No transfer has paid this payment yet.</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table>
<caption class="sr-only">Transfers that paid this payment</caption>
<thead><tr><th scope="col">Transfer</th><th scope="col">Amount</th><th scope="col">Transaction</th><th scope="col">Block</th><th scope="col">From</th><th scope="col">Matched by</th><th scope="col">State</th></tr></thead>
<tbody>${transfers.map(
    (t) => html`<tr><td><code>${transferPublicId(t.id)}</code></td>
<td>${money(BigInt(t.amount), session.decimals, session.currency)}</td>
<td class="tx">${txLink(session.chain, t.tx_hash, session.livemode)}</td>
<td>${t.block_number.toString()}</td>
<td>${shortAddress(t.from_address)}</td>
<td>${t.match_method ?? ''}</td>
<td>${t.status === 'observed' ? 'on chain' : t.status === 'removed' ? 'removed by a reorg' : 'failed'}</td></tr>`,
  )}</tbody></table></div>`;
}

function summary(session: Session, publicUrl: string): Html {
  const d = session.decimals;
  return html`<dl class="facts">
<dt>Status</dt><dd class="payment-status">${statusBadge(session.status)}</dd>
<dt>Amount</dt><dd>${money(session.amount, d, session.currency)}</dd>
${priceFacts(session.price, session.priceQuote, session.currency, '')}
${choiceFacts(optionsOf(session), { chain: session.chain, currency: session.currency })}
<dt>Due (unique amount)</dt><dd>${money(session.amountDue, d, session.currency)}</dd>
<dt>Received (confirmed)</dt><dd class="received">${money(session.amountReceived, d, session.currency)}</dd>
<dt>Pending (seen, not confirmed)</dt><dd>${money(session.amountPending, d, session.currency)}</dd>
<dt>Fee</dt><dd>${money(session.fee, d, session.currency)}</dd>
<dt>Chain</dt><dd>${session.chain}</dd>
<dt>Pays to</dt><dd><code>${session.payTo}</code></dd>
${session.depositAddress ? html`<dt>Deposit address</dt><dd><code>${session.depositAddress}</code> <span class="help">(paid here; forwards only to the wallet above)</span></dd>` : ''}
<dt>Created</dt><dd>${when(session.createdAt)}</dd>
<dt>Expires</dt><dd>${when(session.expiresAt)}</dd>
${session.confirmedAt ? html`<dt>Confirmed</dt><dd>${when(session.confirmedAt)}</dd>` : ''}
${session.failureReason ? html`<dt>Failure</dt><dd>${session.failureReason}</dd>` : ''}
${session.paymentLinkId ? html`<dt>Payment link</dt><dd><a href="/dashboard/links/${session.paymentLinkId}"><code>${session.paymentLinkId}</code></a></dd>` : ''}
<dt>Checkout page</dt><dd><a href="${safeHref(checkoutUrl(publicUrl, session.id))}">${checkoutUrl(publicUrl, session.id)}</a></dd>
${Object.entries(session.metadata).map(([key, value]) => html`<dt>Metadata: ${key}</dt><dd>${value}</dd>`)}
</dl>`;
}

/** The part of the page that changes while the payment moves; it replaces itself every few seconds until the payment is final. */
function liveBlock(detail: PaymentDetail, publicUrl: string): Html {
  const { session } = detail;
  const polls = !isFinal(session);
  return html`<div id="payment-live"${
    polls ? html` hx-get="/dashboard/payments/${session.id}/live" hx-trigger="every ${LIVE_POLL_SECONDS}s" hx-swap="outerHTML"` : ''
  }>
<section class="panel" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>${summary(session, publicUrl)}${confirmationsBlock(session)}</section>
<section class="panel" aria-labelledby="timeline-h"><h2 id="timeline-h">Timeline</h2>${timeline(detail)}</section>
<section class="panel" aria-labelledby="transfers-h"><h2 id="transfers-h">Paid by these transfers</h2>${transfersTable(detail)}</section>
</div>`;
}

/** What the refund form shows: the refusal and the input after a failed request, or the refund just requested (post/redirect/get). */
interface RefundFormState {
  error?: string;
  values?: Record<string, string>;
  requested?: string;
}

async function refundsBlock(ctx: DashboardContext, session: Session, form: RefundFormState = {}): Promise<Html> {
  const refunds = await listRefunds(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, paymentId: session.id, limit: 100 });
  const requested = form.requested ? refunds.find((refund) => refund.id === form.requested) : undefined;
  const values = form.values ?? {};
  return html`<section class="panel" id="refunds" aria-labelledby="refunds-h"><h2 id="refunds-h">Refunds</h2>
${
  requested
    ? noticeBox(
        `Refund ${requested.id} requested: ${formatDisplayAmount(requested.amount, requested.decimals)} ${requested.currency} to ${requested.toAddress}. Pay it from your wallet on the Refunds page.`,
      )
    : ''
}
${
  refunds.length === 0
    ? html`<p class="help">No refund requested.</p>`
    : html`<ul class="refunds">${refunds.map(
        (refund) =>
          html`<li><code>${refund.id}</code> ${money(refund.amount, refund.decimals, refund.currency)} to <code>${refund.toAddress}</code>: <span class="badge">${refund.status}</span>${
            refund.txHash ? html` ${txLink(refund.chain, refund.txHash, refund.livemode)}` : ''
          }</li>`,
      )}</ul>`
}
<p><a href="/dashboard/refunds">All refunds</a> (pay or reject a requested refund there).</p>
${
  ctx.can('payments.manage')
    ? html`<form method="post" action="/dashboard/payments/${session.id}/refunds" class="stack" id="refund-form">
  <h3>Request a refund</h3>
  ${form.error ? errorBox(form.error) : ''}
  ${ctx.csrfField()}
  <label for="refund-amount">Amount in ${session.currency} (empty: all the confirmed money not yet refunded)</label>
  <input id="refund-amount" name="amount" inputmode="decimal" autocomplete="off" value="${values.amount ?? ''}">
  <label for="refund-address">Send to (empty: the payer's address)</label>
  <input id="refund-address" name="address" autocomplete="off" value="${values.address ?? ''}">
  <label for="refund-reason">Reason (optional)</label>
  <input id="refund-reason" name="reason" maxlength="500" value="${values.reason ?? ''}">
  <button type="submit">Request refund</button>
</form>`
    : html`<p class="help">Only an owner can request refunds.</p>`
}
</section>`;
}

async function renderPayment(ctx: DashboardContext, deps: DashboardDeps, id: string, form?: RefundFormState, status = 200, created = false) {
  const detail = await readDetail(ctx, id);
  const { session } = detail;
  return page(
    `Payment ${session.id}`,
    html`<link rel="stylesheet" href="${assetUrl('payments.css')}"><script src="${assetUrl('payments.js')}" defer></script>
${created ? html`<p class="notice" role="status" id="test-payment-created">Test payment created. <a href="${safeHref(checkoutUrl(deps.config.publicUrl, session.id))}">Open its checkout page</a> to pay it with the sandbox; this page follows it.</p>` : ''}
<p><a href="/dashboard/payments">← All payments</a> · ${formatDisplayAmount(session.amount, session.decimals)} ${session.currency} on ${session.chain}</p>
${liveBlock(detail, deps.config.publicUrl)}
${await refundsBlock(ctx, session, form)}`,
    { status },
  );
}

/** Registers a payment's page, its live fragment and its refund request (called by payments.ts). */
export function paymentPage(routes: DashboardRoutes, deps: DashboardDeps): void {
  routes.get<{ id: string }>('/payments/:id', { nav: 'payments' }, async (ctx, request) => {
    const id = request.params.id;
    const elsewhere = await otherModeAnswer(ctx, {
      what: `payment ${id}`,
      path: `/dashboard/payments/${encodeURIComponent(id)}`,
      exists: async (livemode) =>
        Boolean((await getSession(ctx.store, { merchantId: ctx.merchant.id, livemode, id })) ?? (await readPendingChoice(ctx, id, livemode))),
    });
    if (elsewhere) return elsewhere;
    // A session still waiting for its customer's choice is not a payment row yet: its own page.
    if (!(await getSession(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id }))) {
      const waiting = await readPendingChoice(ctx, id, ctx.livemode);
      if (waiting) return pendingChoicePage(deps, waiting);
    }
    const requested = request.query.requested;
    return renderPayment(ctx, deps, id, requested ? { requested } : undefined, 200, request.query.created === 'test');
  });

  routes.get<{ id: string }>('/payments/:id/live', { nav: 'payments' }, async (ctx, request) => {
    const detail = await readDetail(ctx, request.params.id);
    return fragment(liveBlock(detail, deps.config.publicUrl), isFinal(detail.session) ? { status: HTMX_STOP_POLLING } : {});
  });

  // Same domain function and body schema as POST /refunds: the same refusals, word for word.
  routes.post<{ id: string }>('/payments/:id/refunds', { nav: 'payments', permission: 'payments.manage' }, async (ctx, request) => {
    const id = request.params.id;
    if (!(await getSession(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id }))) throw notFound(`payment ${id} not found`);
    const values = { amount: field(request.body, 'amount'), address: field(request.body, 'address'), reason: field(request.body, 'reason') };
    const body = Object.fromEntries(Object.entries({ paymentId: id, ...values }).filter(([, value]) => value !== ''));
    const result = await tryForm(() =>
      ctx.store.transaction(async (sql) =>
        requestRefund(sql, { ...checkBody<Static<typeof CreateRefundBody>>(CreateRefundBody, body), merchantId: ctx.merchant.id, livemode: ctx.livemode }),
      ),
    );
    if (!result.ok) return renderPayment(ctx, deps, id, { error: result.error, values }, 400);
    return redirect(`/dashboard/payments/${id}?requested=${result.value.id}#refunds`);
  });
}
