import fs from 'node:fs';
import { escapeHtml } from './qr.ts';
import { checkoutCsp, cspHash } from './securityHeaders.ts';
import { brandLogo, brandStyle, brandStyleTag, purchaseSection, supportLine } from './brandParts.ts';
import type { PaymentInstructions } from './schema.ts';
import { displayDecimal } from '../internal/money.ts';

const STYLE = fs.readFileSync(new URL('./assets/checkout.css', import.meta.url), 'utf8');
/** The receipt's one script: the Print button (the CSP pins it by hash; everything else works without it). */
const PRINT_SCRIPT = "document.getElementById('print').hidden=false;document.getElementById('print').addEventListener('click',function(){window.print();});";

/** One transaction that paid the session, as the receipt lists it. */
export interface ReceiptTransaction {
  txHash: string;
  amount: string;
  /** The chain explorer's page of the transaction (live sessions only), or undefined. */
  explorerUrl: string | undefined;
}

/** The receipt's CSP: the checkout's, with the print script and the merchant's brand style pinned by hash. */
export function receiptCsp(i: Pick<PaymentInstructions, 'merchant'>): string {
  const brand = brandStyle(i.merchant);
  return checkoutCsp({ scriptHashes: [cspHash(PRINT_SCRIPT)], styleHashes: [cspHash(STYLE), ...(brand ? [cspHash(brand)] : [])] });
}

/** `2025-03-01 14:05 UTC`: one unambiguous form for a printed receipt, whatever the reader's locale. */
function utc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/**
 * The customer's receipt for a paid session: the merchant (brand), what was bought, the amount
 * paid, the transaction(s) with their explorer links, the date, and the session id. Static (no
 * live feed), printable (print CSS in checkout.css), every value escaped.
 */
export function renderReceiptPage(i: PaymentInstructions, transactions: ReceiptTransaction[]): string {
  const paidAt = i.confirmedAt ?? i.createdAt;
  const shown = (text: string) => escapeHtml(displayDecimal(text, i.decimals));
  const txRows = transactions
    .map(
      (tx) =>
        `<li><code class="tx-hash">${escapeHtml(tx.txHash)}</code> (${shown(tx.amount)} ${escapeHtml(i.currency)})${
          tx.explorerUrl ? ` <a class="explorer-link" href="${escapeHtml(tx.explorerUrl)}" rel="noopener noreferrer">View on the explorer</a>` : ''
        }</li>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${escapeHtml(`Receipt: ${displayDecimal(i.amount, i.decimals)} ${i.currency} to ${i.merchant.name}`)}</title>
<style>${STYLE}</style>
${brandStyleTag(i.merchant)}
</head>
<body>
<main id="receipt" class="checkout receipt" data-session-id="${escapeHtml(i.id)}">
<div class="card">
<header class="top">
${brandLogo(i.merchant)}
<p class="merchant">Receipt from <strong id="merchant-name">${escapeHtml(i.merchant.name)}</strong></p>
${i.livemode ? '' : '<span class="badge" id="test-mode">Test mode: no real funds</span>'}
</header>
<h1 class="amount"><span id="amount-paid">${shown(i.amountReceived)}</span> ${escapeHtml(i.currency)}</h1>
<p class="network">paid on <span id="chain-name">${escapeHtml(i.chainName)}</span></p>
${purchaseSection(i)}
<dl class="details">
<div><dt>Date</dt><dd><time id="paid-at" datetime="${escapeHtml(paidAt)}">${escapeHtml(utc(paidAt))}</time></dd></div>
<div><dt>Amount paid</dt><dd>${shown(i.amountReceived)} ${escapeHtml(i.token.symbol)}${i.amountReceived !== i.amountDue ? ` (asked: ${shown(i.amountDue)})` : ''}</dd></div>
<div><dt>Paid to</dt><dd><code id="recipient">${escapeHtml(i.recipient)}</code></dd></div>
<div><dt>Transaction${transactions.length === 1 ? '' : 's'}</dt><dd><ul id="transactions">${txRows}</ul></dd></div>
${i.price && i.priceQuote ? `<div><dt>Price</dt><dd id="fiat-price">${escapeHtml(i.price.amount)} ${escapeHtml(i.price.currency)} at ${escapeHtml(i.priceQuote.rate)} ${escapeHtml(i.currency)} per ${escapeHtml(i.price.currency)}${i.priceQuote.source === 'sandbox' ? ' (sandbox rate)' : ' (Chainlink)'}</dd></div>` : ''}
<div><dt>Payment reference</dt><dd><code id="session-id">${escapeHtml(i.id)}</code></dd></div>
</dl>
${supportLine(i.merchant)}
<div class="receipt-actions">
<button type="button" id="print" class="button brand" hidden>Print or save as PDF</button>
${i.successUrl ? `<a class="button" href="${escapeHtml(i.successUrl)}">Return to ${escapeHtml(i.merchant.name)}</a>` : ''}
</div>
</div>
<footer>Paid straight to ${escapeHtml(i.merchant.name)}'s wallet through a non-custodial gateway. Keep this receipt for your records.</footer>
</main>
<script>${PRINT_SCRIPT}</script>
</body>
</html>`;
}
