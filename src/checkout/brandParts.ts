import { textColorOn } from '../accounts/brand.ts';
import { escapeHtml } from './qr.ts';
import { displayDecimal } from '../internal/money.ts';
import type { PaymentInstructions } from './schema.ts';

/**
 * The parts of the checkout page and the receipt that show the merchant's brand and what is
 * being bought (issue 26). All markup escapes every value; nothing here adds an inline style
 * attribute or script (the CSP forbids them): the accent colour goes in through
 * {@link brandStyle}, a `<style>` block whose hash the page's CSP lists.
 */

type Merchant = PaymentInstructions['merchant'];

/**
 * The per-merchant CSS: the accent as `--brand` and a text colour picked for contrast on it as
 * `--brand-text` (checkout.css uses them). Empty without an accent. The colour was validated as
 * `#rrggbb` when set (and the column's CHECK repeats it), so nothing else can reach the CSS.
 */
export function brandStyle(merchant: Pick<Merchant, 'accentColor'>): string {
  const accent = merchant.accentColor;
  if (!accent || !/^#[0-9a-f]{6}$/.test(accent)) return '';
  return `:root{--brand:${accent};--brand-text:${textColorOn(accent)}}`;
}

/** The `<style>` element of {@link brandStyle}, or nothing. */
export function brandStyleTag(merchant: Pick<Merchant, 'accentColor'>): string {
  const css = brandStyle(merchant);
  return css ? `<style id="brand-style">${css}</style>` : '';
}

/** The merchant's logo as an image from this origin (the URL path only: img-src 'self'), or nothing. */
export function brandLogo(merchant: Pick<Merchant, 'logoUrl' | 'name'>): string {
  if (!merchant.logoUrl) return '';
  const url = new URL(merchant.logoUrl);
  return `<img id="merchant-logo" class="brand-logo" src="${escapeHtml(url.pathname + url.search)}" alt="${escapeHtml(merchant.name)} logo">`;
}

/** The description and the line items table (with the total), or nothing when there are neither. */
export function purchaseSection(i: Pick<PaymentInstructions, 'description' | 'lineItems' | 'amount' | 'currency' | 'decimals'>): string {
  if (!i.description && !i.lineItems) return '';
  const shown = (text: string) => escapeHtml(displayDecimal(text, i.decimals));
  const rows = (i.lineItems ?? [])
    .map(
      (item) =>
        `<tr><td>${escapeHtml(item.name)}</td><td class="num">${item.quantity}</td><td class="num">${shown(item.unitAmount)}</td><td class="num">${shown(item.amount)}</td></tr>`,
    )
    .join('');
  const table = i.lineItems
    ? `<table class="items" id="line-items"><caption class="sr-only">Items (${escapeHtml(i.currency)})</caption>
<thead><tr><th scope="col">Item</th><th scope="col" class="num">Qty</th><th scope="col" class="num">Price</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>${rows}</tbody>
<tfoot><tr><th scope="row" colspan="3">Total</th><td class="num">${shown(i.amount)} ${escapeHtml(i.currency)}</td></tr></tfoot></table>`
    : '';
  return `<section class="purchase" id="purchase" aria-label="What you are paying for">${i.description ? `<p id="description">${escapeHtml(i.description)}</p>` : ''}${table}</section>`;
}

/** "Questions? Contact …" with the merchant's support email and URL, or nothing. */
export function supportLine(merchant: Pick<Merchant, 'supportEmail' | 'supportUrl' | 'name'>): string {
  const parts: string[] = [];
  if (merchant.supportEmail)
    parts.push(`<a id="support-email" href="mailto:${escapeHtml(encodeURI(merchant.supportEmail))}">${escapeHtml(merchant.supportEmail)}</a>`);
  if (merchant.supportUrl)
    parts.push(`<a id="support-url" href="${escapeHtml(merchant.supportUrl)}" rel="noopener noreferrer">${escapeHtml(merchant.name)} support</a>`);
  return parts.length ? `<p class="support">Questions about this payment? Contact ${parts.join(' or ')}.</p>` : '';
}

/** The "cancel and return" link while the customer has not paid, or nothing. */
export function cancelLink(i: Pick<PaymentInstructions, 'cancelUrl' | 'merchant' | 'view'>): string {
  if (!i.cancelUrl || i.view === 'paid') return '';
  return `<p class="cancel"><a id="cancel-link" href="${escapeHtml(i.cancelUrl)}">Cancel and return to ${escapeHtml(i.merchant.name)}</a></p>`;
}
