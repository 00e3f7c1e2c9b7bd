import fs from 'node:fs';
import { checkoutCsp, cspHash } from './securityHeaders.ts';
import { escapeHtml } from './qr.ts';
import type { PaymentInstructions } from './schema.ts';
import type { CheckoutView } from './view.ts';
import { brandLogo, brandStyle, brandStyleTag, cancelLink, purchaseSection, supportLine } from './brandParts.ts';
import { displayDecimal } from '../internal/money.ts';
import { wayBack } from './wayBack.ts';

const STYLE = fs.readFileSync(new URL('./assets/checkout.css', import.meta.url), 'utf8');
const SCRIPT = fs.readFileSync(new URL('./assets/checkout.js', import.meta.url), 'utf8');
const PROOF_SCRIPT = fs.readFileSync(new URL('./assets/proof.js', import.meta.url), 'utf8');

/**
 * The page's CSP: its one inline script and one inline style, pinned by hash; `frameAncestors`
 * are the origins that may frame it (none by default). `extraStyles`: more inline style blocks
 * the page carries (the merchant's brand colour, {@link brandStyle}), each pinned by its hash too.
 */
export function pageCsp(frameAncestors: readonly string[] = [], extraStyles: readonly string[] = []): string {
  const styleHashes = [cspHash(STYLE), ...extraStyles.filter(Boolean).map(cspHash)];
  return checkoutCsp({ scriptHashes: [cspHash(SCRIPT), cspHash(PROOF_SCRIPT)], styleHashes, frameAncestors });
}

/** The CSP of one session's page: {@link pageCsp} with the merchant's brand style's hash. */
export function pageCspFor(i: Pick<PaymentInstructions, 'merchant'>, frameAncestors: readonly string[] = []): string {
  return pageCsp(frameAncestors, [brandStyle(i.merchant)]);
}

/**
 * Extra markup for sandbox sessions (livemode false), e.g. the sandbox's "simulate payment"
 * button. It is placed in `<section id="sandbox-tools">`, which the page renders only for
 * sandbox sessions. It must not carry inline scripts or styles (the CSP refuses them); a form
 * posting to this origin works.
 */
export type SandboxPanel = (instructions: PaymentInstructions) => string;

/** JSON inside `<script type="application/json">`: `<` escaped so no text can close the tag. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function hiddenUnless(view: CheckoutView, views: CheckoutView[]): string {
  return `data-views="${views.join(' ')}"${views.includes(view) ? '' : ' hidden'}`;
}

/** Initial text of the live status line; the script keeps it current (same wording). */
export function statusLine(
  i: Pick<PaymentInstructions, 'view' | 'confirmations' | 'requiredConfirmations' | 'amountRemaining' | 'currency' | 'decimals'>,
): string {
  switch (i.view) {
    case 'awaiting':
      return 'Waiting for your payment.';
    case 'detected':
      return `Payment detected: ${i.confirmations} of ${i.requiredConfirmations} confirmations.`;
    case 'underpaid':
      return `Partly paid: ${displayDecimal(i.amountRemaining, i.decimals)} ${i.currency} still to pay.`;
    case 'paid':
      return 'Payment confirmed. Thank you!';
    case 'expired':
      return 'This payment request has expired.';
    default:
      return 'Payment incomplete: the request expired before the full amount arrived.';
  }
}

function copyable(id: string, text: string, label: string, suffix = ''): string {
  return `<span class="value"><code id="${id}">${escapeHtml(text)}</code>${suffix ? ` ${escapeHtml(suffix)}` : ''}</span><button type="button" data-copy="${id}" data-copied="${escapeHtml(label)} copied"><span class="copy-label">Copy</span><span class="sr-only"> ${escapeHtml(label)}</span></button>`;
}

/**
 * The hosted checkout page for one session, complete (style and script inline, QR code from
 * this origin), so it needs nothing from any other host. Every value from the database is
 * escaped; the initial state is embedded as JSON for the script.
 */
export function renderCheckoutPage(
  i: PaymentInstructions,
  params: {
    qrUrl: string;
    sandboxPanel?: SandboxPanel;
    /** Where an expired session's customer starts again: its payment link's page (`/pay/…`), when it came from one. */
    restartUrl?: string | null;
  },
): string {
  const view = i.view as CheckoutView;
  // Amounts for people: at least cents ("19.90"); the JSON keeps the wire's text.
  const shown = (text: string) => escapeHtml(displayDecimal(text, i.decimals));
  const v = (views: CheckoutView[]) => hiddenUnless(view, views);
  // The script talks to the origin it was loaded from (relative paths), so a page reached under
  // another host name than SVC_PUBLIC_URL still works within its CSP's connect-src 'self'.
  const base = `/checkout/${encodeURIComponent(i.id)}`;
  const state = {
    ...i,
    qrBase: params.qrUrl,
    statusPath: `${base}/status`,
    eventsPath: `${base}/events`,
    refundPath: `${base}/refund`,
    proofPath: `${base}/transactions`,
  };
  const token = i.token;
  const chainLabel = `${i.chainName} (${i.chainKind === 'evm' ? `chain id ${i.chainId}` : String(i.chainId)})`;
  const title = `Pay ${displayDecimal(i.amountDue, i.decimals)} ${i.currency} to ${i.merchant.name}`;
  const payUri = i.paymentUri ?? '';

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${brandStyleTag(i.merchant)}
</head>
<body>
<a class="skip" href="#pay">Skip to payment details</a>
<main id="checkout" class="checkout" data-view="${view}" data-session-id="${escapeHtml(i.id)}">
<div class="card">
<header class="top">
${brandLogo(i.merchant)}
<p class="merchant">Pay <strong id="merchant-name">${escapeHtml(i.merchant.name)}</strong></p>
${i.livemode ? '' : '<span class="badge" id="test-mode">Test mode: no real funds</span>'}
</header>
<h1 class="amount"><span id="amount-due">${shown(i.amountDue)}</span> ${escapeHtml(i.currency)}</h1>
<p class="network">on <span id="chain-name">${escapeHtml(i.chainName)}</span></p>
${purchaseSection(i)}
<p id="status" class="status" role="status" aria-live="polite">${escapeHtml(statusLine(i))}</p>
<p id="announce" class="sr-only" aria-live="assertive"></p>

<section class="notice" ${v(['detected'])}>
<h2 tabindex="-1">Payment detected</h2>
<p>Waiting for the network to confirm it: <span id="confirmations">${i.confirmations}</span> of <span id="required-confirmations">${i.requiredConfirmations}</span> confirmations.</p>
<progress id="confirm-progress" max="${Math.max(1, i.requiredConfirmations)}" value="${Math.min(i.confirmations, i.requiredConfirmations)}" aria-label="Confirmations"></progress>
</section>

<section class="notice" ${v(['underpaid', 'failed'])}>
<h2 tabindex="-1">${view === 'failed' ? 'Payment incomplete' : 'Partly paid'}</h2>
<p>Received <span id="received">${shown(i.amountReceived)}</span> ${escapeHtml(i.currency)}; <span id="remaining">${shown(i.amountRemaining)}</span> ${escapeHtml(i.currency)} ${view === 'failed' ? 'was missing when the request expired. You can ask for a refund below.' : 'left to pay. Send the rest to the same address before the request expires.'}</p>
</section>

<section class="notice" ${v(['paid'])}>
<h2 tabindex="-1">Payment confirmed</h2>
<p>${escapeHtml(i.merchant.name)} has received your payment.</p>
<p><a id="receipt-link" href="${base}/receipt">View and print your receipt</a></p>
<p hidden>Transaction: <code id="tx-hash">${escapeHtml(i.txHash ?? '')}</code></p>
${i.successUrl ? `<p id="redirect-note" hidden>Taking you back to ${escapeHtml(i.merchant.name)}…</p><p><a id="success-link" href="${escapeHtml(i.successUrl)}">Return to ${escapeHtml(i.merchant.name)}</a></p>` : ''}
</section>

<section class="notice" ${v(['expired'])}>
<h2 tabindex="-1">This payment request has expired</h2>
<p>Do not send funds to it any more.${params.restartUrl || i.cancelUrl || i.successUrl ? '' : ` Return to ${escapeHtml(i.merchant.name)} to start a new payment.`}</p>
${wayBack(i, params.restartUrl ?? null)}
</section>

<section id="pay" aria-label="How to pay"${i.payable ? '' : ' hidden'}>
<div class="layout">
<div class="qr">
<a id="qr-link" href="${escapeHtml(payUri)}"><img id="qr" ${i.payable ? `src="${escapeHtml(params.qrUrl)}?amount=${escapeHtml(i.amountRemainingBaseUnits)}" ` : ''}width="256" height="256" alt="QR code of the wallet payment link for ${shown(i.amountRemaining)} ${escapeHtml(i.currency)} on ${escapeHtml(i.chainName)}"></a>
<a id="wallet-link" class="button primary" href="${escapeHtml(payUri)}">Open in wallet</a>
</div>
<div>
<dl class="details">
<div><dt>${i.attribution === 'address' ? 'Amount to send' : 'Amount to send (exactly)'}</dt><dd>${copyable('pay-amount', displayDecimal(i.amountRemaining, i.decimals), 'amount', i.currency)}</dd></div>
<div><dt>To address</dt><dd>${copyable('pay-address', i.recipient, 'address')}</dd></div>
<div><dt>Network</dt><dd><span id="network">${escapeHtml(chainLabel)}</span></dd></div>
<div><dt>${i.chainKind === 'evm' ? 'Token contract' : 'Token mint'} (${escapeHtml(token.symbol)})</dt><dd><code id="token-address">${escapeHtml(token.address)}</code></dd></div>
${i.reference ? `<div><dt>Reference (Solana Pay)</dt><dd><code id="reference">${escapeHtml(i.reference)}</code></dd></div>` : ''}
</dl>
<p class="hint">${
    i.attribution === 'address'
      ? `Send ${escapeHtml(token.symbol)} on ${escapeHtml(i.chainName)} to this address: it is this payment's own address, so it may come from any wallet or exchange, in one transfer or several. Another token or network will not be detected.`
      : `Send exactly this amount of ${escapeHtml(token.symbol)} on ${escapeHtml(i.chainName)}: the amount identifies your payment. Another token or network will not be detected.`
  }</p>
<p class="timer">Expires in <time id="countdown" role="timer" aria-live="off" datetime="${escapeHtml(i.expiresAt)}">${formatCountdown(i.secondsToExpiry)}</time></p>
</div>
</div>
</section>

<section id="refund" aria-label="Refund"${i.refundUrl ? '' : ' hidden'}>
<details id="refund-details"${view === 'failed' ? ' open' : ''}>
<summary>Ask for a refund</summary>
<form id="refund-form" class="refund" novalidate>
<label for="refund-destination">Your ${escapeHtml(i.chainName)} address for the refund</label>
<input id="refund-destination" name="destination" autocomplete="off" spellcheck="false" required aria-describedby="refund-error">
<label for="refund-reason">Reason (optional)</label>
<textarea id="refund-reason" name="reason" rows="2" maxlength="500"></textarea>
<label for="refund-email">Email for the merchant to reach you (optional)</label>
<input id="refund-email" name="email" type="email" autocomplete="email">
<p id="refund-error" class="error" role="alert"></p>
<button type="submit">Request refund</button>
</form>
</details>
<p id="refund-result" tabindex="-1" role="status" hidden></p>
</section>

${
  i.proofMessage
    ? `<section id="prove" aria-label="Prove a payment"${i.payable ? '' : ' hidden'}>
<details id="prove-details">
<summary>Paid from your own wallet and not detected? Prove it</summary>
<form id="prove-form" class="refund" novalidate>
<p class="hint">Paste your payment's transaction, then sign a message with the wallet that sent it. Signing is free and moves no funds; only the sender can prove a payment.</p>
<label for="prove-tx">Transaction ${i.chainKind === 'evm' ? 'hash' : 'signature'}</label>
<input id="prove-tx" name="txHash" autocomplete="off" spellcheck="false" required aria-describedby="prove-error">
<p id="prove-error" class="error" role="alert"></p>
<button type="submit">Sign with my wallet and prove</button>
</form>
</details>
<p id="prove-result" tabindex="-1" role="status" hidden></p>
</section>`
    : ''
}
${i.livemode ? '' : `<section id="sandbox-tools" aria-label="Sandbox tools" data-sandbox-session="${escapeHtml(i.id)}">${params.sandboxPanel?.(i) ?? ''}</section>`}
<div ${v(['awaiting'])}>${cancelLink(i)}</div>
${supportLine(i.merchant)}
<noscript><p>Reload this page to see the payment status.</p></noscript>
</div>
<footer>${i.attribution === 'address' ? `This address only ever forwards to ${escapeHtml(i.merchant.name)}'s wallet` : `Payments go straight to ${escapeHtml(i.merchant.name)}'s wallet`}. Session ${escapeHtml(i.id)}</footer>
</main>
<script type="application/json" id="checkout-data">${jsonForScript(state)}</script>
<script>${SCRIPT}</script>
${i.proofMessage ? `<script>${PROOF_SCRIPT}</script>` : ''}
</body>
</html>`;
}

/** `m:ss`, or `h:mm:ss` from an hour up: what the script shows too. */
export function formatCountdown(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h > 0 ? `${h}:${String(m).padStart(2, '0')}` : String(m)}:${String(s).padStart(2, '0')}`;
}

/** A small page for a checkout that does not exist (same look, same headers). */
export function renderNotFoundPage(): string {
  return renderMessagePage('Payment not found', 'This payment link is not valid. Check the link you were given, or return to the merchant.');
}

/** A page with one message, in the checkout's style (same CSP): what a customer's browser gets instead of raw JSON. */
export function renderMessagePage(title: string, text: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main class="checkout"><div class="card"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></div></main></body>
</html>`;
}
