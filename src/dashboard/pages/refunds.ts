import { loadChains } from '../../internal/chains.ts';
import { formatAmount, formatDisplayAmount } from '../../internal/money.ts';
import { fakeTxHash } from '../../internal/sandboxIds.ts';
import { qrSvg } from '../../checkout/qr.ts';
import { sessionPaymentUri } from '../../checkout/uris.ts';
import { REFUND_STATUSES, type Refund, type RefundStatus } from '../../payments/refund.ts';
import { completeRefundVerified } from '../../payments/refundCompletion.ts';
import { getRefund, listRefunds, rejectRefund } from '../../payments/refunds.ts';
import { getSessionById } from '../../payments/sessions.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { assetUrl } from '../assets.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';
import { otherModeAnswer } from './otherMode.ts';

/**
 * Refunds: the list (filtered by state), one refund's page, and its two actions. The gateway
 * holds no funds, so "pay" is non-custodial: the page shows the refund as a wallet request
 * (EIP-681 on EVM chains, Solana Pay on solana; the checkout's own URI builder) as a QR code and
 * a wallet link for the merchant's own wallet to sign, then the merchant records the transaction
 * hash and the gateway verifies it on chain before the refund is completed
 * (src/payments/refundCompletion.ts, the function the API's `POST /refunds/{id}/complete` calls).
 * Owners only (`payments.manage`); completing and rejecting are audited.
 */

const PAGE_SIZE = 50;
const STATUS_LABELS: Record<RefundStatus, string> = { requested: 'Requested', completed: 'Completed', rejected: 'Rejected' };

const amountText = (refund: Refund) => `${formatDisplayAmount(refund.amount, refund.decimals)} ${refund.currency}`;
const dateText = (date: Date) => date.toISOString().replace('T', ' ').slice(0, 16);

function statusBadge(refund: Refund): Html {
  return html`<span class="badge refund-${refund.status}">${STATUS_LABELS[refund.status]}</span>${
    refund.flaggedAt ? html` <span class="badge attention">Needs attention</span>` : ''
  }`;
}

function listPage(ctx: DashboardContext, refunds: Refund[], status: RefundStatus | undefined, hasMore: boolean): Html {
  const filter = html`<form method="get" action="/dashboard/refunds" class="inline refund-filter">
  <div class="stack"><label for="refund-status">State</label>
  <select id="refund-status" name="status">
    <option value=""${status ? '' : html` selected`}>All</option>
    ${REFUND_STATUSES.map((value) => html`<option value="${value}"${value === status ? html` selected` : ''}>${STATUS_LABELS[value]}</option>`)}
  </select></div>
  <button type="submit" class="secondary">Filter</button>
</form>`;
  const rows = refunds.map(
    (refund) => html`<tr>
  <td data-label="Refund"><a href="/dashboard/refunds/${refund.id}"><code>${refund.id}</code></a></td>
  <td data-label="Amount" class="num">${amountText(refund)}</td>
  <td data-label="Chain">${refund.chain}</td>
  <td data-label="State">${statusBadge(refund)}</td>
  <td data-label="To"><code>${refund.toAddress}</code></td>
  <td data-label="Requested">${dateText(refund.createdAt)}</td>
</tr>`,
  );
  const table = refunds.length
    ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table class="stacked">
<caption class="sr-only">Refunds, newest first</caption>
<thead><tr><th scope="col">Refund</th><th scope="col">Amount</th><th scope="col">Chain</th><th scope="col">State</th><th scope="col">To</th><th scope="col">Requested</th></tr></thead>
<tbody>${rows}</tbody></table></div>
${hasMore ? html`<p><a href="/dashboard/refunds?${new URLSearchParams({ ...(status ? { status } : {}), after: refunds[refunds.length - 1]!.id }).toString()}">Older refunds</a></p>` : ''}`
    : html`<p class="placeholder">No ${status ? STATUS_LABELS[status].toLowerCase() : ''} refunds ${ctx.livemode ? '' : 'in test mode '}yet. Refunds are requested through the API (<code>POST /refunds</code>) or by payers from the checkout page.</p>`;
  return html`${filter}${table}`;
}

/** The wallet request that pays `refund` from the payment's receiving wallet, and its QR code. */
async function paymentRequest(ctx: DashboardContext, refund: Refund, token: string): Promise<{ uri: string; qr: string }> {
  const chain = loadChains()[refund.chain];
  const uri = sessionPaymentUri({
    chain,
    livemode: refund.livemode,
    token,
    recipient: refund.toAddress,
    baseUnits: refund.amount,
    amount: formatAmount(refund.amount, refund.decimals),
    reference: null,
    label: ctx.merchant.name,
    message: `Refund ${refund.id}`,
  });
  const svg = await qrSvg(uri, { label: `QR code of the refund request for ${amountText(refund)}` });
  return { uri, qr: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}` };
}

async function detailPage(ctx: DashboardContext, refund: Refund, message?: { error?: string; notice?: string; txHash?: string }): Promise<Html> {
  const payment = (await getSessionById(ctx.store, { id: refund.sessionId, fields: ['payTo', 'tokenAddresses', 'status'] }))!;
  const facts = html`<dl class="facts">
  <dt>State</dt><dd>${statusBadge(refund)}</dd>
  <dt>Amount</dt><dd>${amountText(refund)} <span class="help">(${refund.amount.toString()} base units)</span></dd>
  <dt>Payment</dt><dd><a href="/dashboard/payments/${refund.sessionId}"><code>${refund.sessionId}</code></a></dd>
  <dt>Chain</dt><dd>${refund.chain}</dd>
  <dt>Send from</dt><dd><code>${payment.payTo}</code> <span class="help">(the payment's receiving wallet)</span></dd>
  <dt>Send to</dt><dd><code id="refund-address">${refund.toAddress}</code> <button type="button" class="secondary" data-copy="refund-address">Copy</button></dd>
  ${refund.reason ? html`<dt>Reason</dt><dd>${refund.reason}</dd>` : ''}
  ${refund.txHash ? html`<dt>Transaction</dt><dd><code>${refund.txHash}</code></dd>` : ''}
  ${refund.rejectionReason ? html`<dt>Rejection reason</dt><dd>${refund.rejectionReason}</dd>` : ''}
  ${refund.flagReason ? html`<dt>Needs attention</dt><dd>${refund.flagReason}</dd>` : ''}
  <dt>Requested</dt><dd>${dateText(refund.createdAt)}</dd>
</dl>`;
  const feedback = html`${message?.error ? errorBox(message.error) : ''}${message?.notice ? noticeBox(message.notice) : ''}`;
  if (refund.status !== 'requested' || !ctx.can('payments.manage')) return html`${feedback}${facts}`;

  const token = payment.tokenAddresses[0]!;
  const request = await paymentRequest(ctx, refund, token);
  const chain = loadChains()[refund.chain];
  const required = chain.confirmations.confirmed;
  const rule = typeof required === 'number' ? `${required} blocks deep` : 'finalized';
  const pay = html`<section class="panel refund-pay" aria-labelledby="pay-heading">
  <h2 id="pay-heading">1. Send the refund from your wallet</h2>
  <p>Scan the code with the wallet that holds <code>${payment.payTo}</code>, or open the request in a wallet on this device. It asks for exactly ${amountText(refund)} to <code>${refund.toAddress}</code>${refund.livemode ? '' : html` <strong>(test mode: the request names a test network and a token that does not exist, so no real money can move)</strong>`}.</p>
  <div class="refund-request">
    <img id="qr" class="qr" src="${request.qr}" width="192" height="192" alt="QR code of the wallet request for ${amountText(refund)} to ${refund.toAddress}">
    <div class="stack">
      ${
        refund.livemode && chain.kind === 'evm'
          ? html`<button type="button" data-refund-send data-from="${payment.payTo}" data-to="${refund.toAddress}" data-amount="${refund.amount.toString()}" data-token="${token}" data-chain-id="${`0x${Number(chain.chainId).toString(16)}`}">Send with my browser wallet</button>
      <p class="help" id="send-status" role="status"></p>`
          : ''
      }
      <a class="button${refund.livemode && chain.kind === 'evm' ? ' secondary' : ''}" id="wallet-link" href="${request.uri}">Open in wallet</a>
      <code id="refund-uri" class="secret">${request.uri}</code>
      <button type="button" class="secondary" data-copy="refund-uri">Copy request</button>
    </div>
  </div>
</section>`;
  const complete = html`<section class="panel" aria-labelledby="complete-heading">
  <h2 id="complete-heading">2. Record the transaction</h2>
  <form method="post" action="/dashboard/refunds/${refund.id}/complete" class="stack">
    ${ctx.csrfField()}
    <label for="tx-hash">Transaction hash</label>
    <input id="tx-hash" name="txHash" required autocomplete="off" spellcheck="false" value="${message?.txHash ?? ''}" aria-describedby="tx-help">
    <p class="help" id="tx-help">${
      refund.livemode
        ? `The gateway reads it on ${refund.chain} and completes the refund only if it sends exactly ${amountText(refund)} from the payment's receiving wallet to the refund's address, and is ${rule}.`
        : 'Test mode: there is no chain to read; any well-formed hash is accepted once.'
    }</p>
    <button type="submit">Complete the refund</button>
  </form>
  ${
    refund.livemode
      ? ''
      : html`<form method="post" action="/dashboard/refunds/${refund.id}/complete" class="inline">${ctx.csrfField()}<input type="hidden" name="simulate" value="1"><button type="submit" class="secondary">Simulate the refund transaction</button></form>`
  }
</section>`;
  const reject = html`<section class="panel" aria-labelledby="reject-heading">
  <h2 id="reject-heading">Or reject it</h2>
  <form method="post" action="/dashboard/refunds/${refund.id}/reject" class="stack" data-confirm="Reject this refund request? Its amount becomes refundable again.">
    ${ctx.csrfField()}
    <label for="reject-reason">Reason (optional, shown to the API and in the refund.rejected event)</label>
    <input id="reject-reason" name="reason" maxlength="500">
    <button type="submit" class="danger">Reject the refund</button>
  </form>
</section>`;
  return html`${feedback}${facts}${pay}${complete}${reject}<script src="${assetUrl('refunds.js')}" defer></script>`;
}

export const refundPages: DashboardPageModule = (routes, deps) => {
  routes.get('/refunds', { nav: 'refunds' }, async (ctx, request) => {
    const wanted = request.query.status;
    const status = REFUND_STATUSES.find((value) => value === wanted);
    const after = request.query.after;
    // A cursor that is not this merchant's refund (in this mode) starts from the newest.
    const startingAfter =
      after && (await tryForm(() => getRefund(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: after }))).ok ? after : undefined;
    const rows = await listRefunds(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, status, startingAfter, limit: PAGE_SIZE + 1 });
    return page('Refunds', listPage(ctx, rows.slice(0, PAGE_SIZE), status, rows.length > PAGE_SIZE));
  });

  routes.get<{ id: string }>('/refunds/:id', { nav: 'refunds' }, async (ctx, request) => {
    const id = request.params.id;
    const elsewhere = await otherModeAnswer(ctx, {
      what: `refund ${id}`,
      path: `/dashboard/refunds/${encodeURIComponent(id)}`,
      exists: async (livemode) => (await tryForm(() => getRefund(ctx.store, { merchantId: ctx.merchant.id, livemode, id }))).ok,
    });
    if (elsewhere) return elsewhere;
    const refund = await getRefund(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: request.params.id });
    const notice =
      request.query.done === 'completed'
        ? 'Refund completed: its transaction was verified.'
        : request.query.done === 'rejected'
          ? 'Refund rejected.'
          : undefined;
    return page(`Refund ${refund.id}`, await detailPage(ctx, refund, notice ? { notice } : undefined));
  });

  routes.post<{ id: string }>('/refunds/:id/complete', { nav: 'refunds', permission: 'payments.manage' }, async (ctx, request) => {
    const params = { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: request.params.id };
    const refund = await getRefund(ctx.store, params);
    // Test mode only: a hash made up here stands for the transfer the sandbox cannot make.
    const txHash = !ctx.livemode && field(request.body, 'simulate') === '1' ? fakeTxHash(refund.chain) : field(request.body, 'txHash');
    const result = await tryForm(() =>
      completeRefundVerified(ctx.store, deps.lookups, { ...params, txHash }, (sql, completed) =>
        ctx.audit('refund.completed', {
          target: completed.id,
          sql,
          details: { txHash: completed.txHash, amount: amountText(completed), to: completed.toAddress },
        }),
      ),
    );
    if (result.ok) return redirect(`/dashboard/refunds/${refund.id}?done=completed`);
    const current = await getRefund(ctx.store, params);
    return page(`Refund ${refund.id}`, await detailPage(ctx, current, { error: result.error, txHash }), { status: result.status });
  });

  routes.post<{ id: string }>('/refunds/:id/reject', { nav: 'refunds', permission: 'payments.manage' }, async (ctx, request) => {
    const params = { merchantId: ctx.merchant.id, livemode: ctx.livemode, id: request.params.id };
    const reason = field(request.body, 'reason') || undefined;
    const result = await tryForm(() =>
      ctx.store.transaction(async (sql) => {
        const rejected = await rejectRefund(sql, { ...params, reason });
        await ctx.audit('refund.rejected', { target: rejected.id, sql, details: { amount: amountText(rejected), reason: reason ?? null } });
        return rejected;
      }),
    );
    if (result.ok) return redirect(`/dashboard/refunds/${params.id}?done=rejected`);
    const current = await getRefund(ctx.store, params);
    return page(`Refund ${params.id}`, await detailPage(ctx, current, { error: result.error }), { status: result.status });
  });
};
