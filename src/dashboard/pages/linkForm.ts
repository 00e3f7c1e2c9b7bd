import { CURRENCIES, FIAT_CURRENCIES, loadChains } from '../../internal/chains.ts';
import { badRequest } from '../../internal/errors.ts';
import { CHAIN_NAMES, type ChainName } from '../../internal/config.ts';
import { AMOUNT_LIMITS } from '../../payments/terms.ts';
import { checkPaymentOptions, pairName, type PaymentOption } from '../../payments/options.ts';
import type { Sql } from '../../store/index.ts';
import { errorBox, field } from '../forms.ts';
import { html, type Html } from '../html.ts';
import type { DashboardContext } from '../routes.ts';

/**
 * The dashboard's payment-link form (issue 26): what `POST /payment-links` takes, as form fields.
 * The customer pays a stablecoin amount or a fiat price; the link accepts one or several
 * (chain, currency) pairs, ticked among every pair the merchant can receive in this mode (all by
 * default). The form's text becomes the API's JSON body ({@link linkBodyOf}), checked by the
 * API's schema and create function, so every refusal is the API's, word for word.
 */

/** The form's text fields (the pair checkboxes are `pay.<chain>.<currency>`, see {@link pairField}). */
export const FORM_FIELDS = [
  'amount',
  'priceAmount',
  'priceCurrency',
  'currency',
  'chain',
  'pairsShown',
  'merchantWallet',
  'expiresIn',
  'successUrl',
  'cancelUrl',
  'webhookUrl',
  'description',
  'lineItems',
  'metadata',
  'x402Discoverable',
] as const;
export type LinkForm = Record<(typeof FORM_FIELDS)[number], string> & { pairs: PaymentOption[] };

/** A pair's checkbox name: one name each, since the form parser keeps one value per name. */
export function pairField(pair: PaymentOption): string {
  return `pay.${pair.chain}.${pair.currency}`;
}

/** The form as posted: its text fields and the pairs ticked. */
export function readLinkForm(body: Record<string, string | undefined> | undefined): LinkForm {
  const values = Object.fromEntries(FORM_FIELDS.map((name) => [name, field(body, name)])) as unknown as LinkForm;
  values.pairs = [];
  for (const chain of CHAIN_NAMES) for (const currency of CURRENCIES) if (field(body, pairField({ chain, currency }))) values.pairs.push({ chain, currency });
  return values;
}

/** `key=value` lines as an object; a line without `=` is a 400 naming it. */
function keyValueLines(text: string, what: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (!line.trim()) continue;
    const at = line.indexOf('=');
    if (at < 0) throw badRequest(`${what} line ${index + 1} must be key=value`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { ...out };
}

/** `quantity x name = unit amount` lines as the API's lineItems; the quantity part is optional (1). */
function lineItemsOf(text: string): { name: string; quantity: number; unitAmount: string }[] {
  const items: { name: string; quantity: number; unitAmount: string }[] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (!line.trim()) continue;
    const match = /^\s*(?:(\d{1,9})\s*[x×]\s+)?(.+?)\s*=\s*(\S+)\s*$/.exec(line);
    if (!match) throw badRequest(`line items line ${index + 1} must read "2 x Mug = 12.50" (quantity optional)`);
    items.push({ name: match[2]!, quantity: match[1] ? Number(match[1]) : 1, unitAmount: match[3]! });
  }
  return items;
}

/**
 * The form's text as `POST /payment-links`'s JSON body: empty fields left out (the API's
 * defaults apply). One pair ticked: `chain` + `currency` (a single-pair link, which may name its
 * own wallet); several: `paymentOptions`; a form that showed the pairs with none ticked is a 400.
 * A fiat price is sent as `price`, an amount as `amount`, both when both are filled (the API says
 * which one to give). `expiresIn` a number when it is digits (else the text, which the schema
 * refuses with the API's message); metadata from `key=value` lines.
 */
export function linkBodyOf(form: LinkForm): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const name of ['amount', 'merchantWallet', 'successUrl', 'cancelUrl', 'webhookUrl', 'description'] as const) if (form[name]) body[name] = form[name];
  if (form.priceAmount) body.price = { amount: form.priceAmount, currency: form.priceCurrency || 'USD' };
  // A post that names chain and currency (a script, an older form) is a single pair as before.
  if (form.chain || form.currency) {
    if (form.chain) body.chain = form.chain;
    if (form.currency) body.currency = form.currency;
  } else if (form.pairsShown) {
    if (form.pairs.length === 0) throw badRequest('tick at least one chain and token the customer can pay with');
    if (form.pairs.length === 1) Object.assign(body, form.pairs[0]);
    else body.paymentOptions = form.pairs;
  }
  if (form.x402Discoverable) body.x402Discoverable = true;
  if (form.expiresIn) body.expiresIn = /^\d{1,9}$/.test(form.expiresIn) ? Number(form.expiresIn) : form.expiresIn;
  if (form.metadata) body.metadata = keyValueLines(form.metadata, 'metadata');
  if (form.lineItems) body.lineItems = lineItemsOf(form.lineItems);
  return body;
}

/**
 * Every (chain, currency) the merchant can receive in this mode (a wallet, the chain watched in
 * live mode, the token offered): the API's default `paymentOptions`, read with the same check.
 * None: an empty list (the form then says to add a wallet).
 */
export async function receivablePairs(sql: Sql, params: { merchantId: string; livemode: boolean; liveChains: readonly ChainName[] }): Promise<PaymentOption[]> {
  try {
    return (await checkPaymentOptions(sql, { ...params, amount: AMOUNT_LIMITS.min })).map((option) => option.pair);
  } catch {
    return [];
  }
}

function options(values: readonly string[], chosen: string): Html {
  return html`${values.map((value) => html`<option value="${value}"${value === chosen ? html` selected` : ''}>${value}</option>`)}`;
}

/** Every pair of the configured chains: what the form offers (unticked) when the merchant can receive none with its wallets. */
function everyPair(): PaymentOption[] {
  const chains = loadChains();
  return CHAIN_NAMES.filter((chain) => chains[chain]).flatMap((chain) => CURRENCIES.map((currency) => ({ chain, currency })));
}

/** The pair checkboxes, ticked as the re-shown form had them (a fresh form: `fresh`). */
function pairBoxes(pairs: PaymentOption[], values: Partial<LinkForm>, fresh: boolean, help: string): Html {
  return html`<p class="help" id="link-pairs-help">${help}</p>
<ul class="pair-list">${pairs.map(
    (pair) =>
      html`<li><label><input type="checkbox" name="${pairField(pair)}" value="on"${ticked(values, pair, fresh) ? html` checked` : ''} aria-describedby="link-pairs-help"> ${pairName(pair)}</label></li>`,
  )}</ul>`;
}

/** Whether a re-shown form had the pair ticked (a fresh form: `fresh`). */
function ticked(values: Partial<LinkForm>, pair: PaymentOption, fresh: boolean): boolean {
  if (!values.pairsShown) return fresh;
  return (values.pairs ?? []).some((p) => p.chain === pair.chain && p.currency === pair.currency);
}

/** The create form, re-shown with the person's input and the refusal after a failed create. */
export function createLinkForm(ctx: DashboardContext, pairs: PaymentOption[], values: Partial<LinkForm>, error?: string): Html {
  const mode = ctx.livemode ? 'live' : 'test';
  return html`<form method="post" action="/dashboard/links" class="stack" id="create-link">
<h2>Create a payment link</h2>
${error ? errorBox(error) : ''}
${ctx.csrfField()}
<fieldset class="stack"><legend>Price (give one)</legend>
<label for="link-amount">Amount in stablecoin</label>
<input id="link-amount" name="amount" inputmode="decimal" autocomplete="off" value="${values.amount ?? ''}" aria-describedby="link-amount-help">
<p class="help" id="link-amount-help">Decimal text such as 25.00: that many units of whichever stablecoin the customer pays with.</p>
<label for="link-price">Or a price in a fiat currency</label>
<input id="link-price" name="priceAmount" inputmode="decimal" autocomplete="off" value="${values.priceAmount ?? ''}" aria-describedby="link-price-help">
<label for="link-price-currency">Fiat currency</label>
<select id="link-price-currency" name="priceCurrency">${options(FIAT_CURRENCIES, values.priceCurrency || 'USD')}</select>
<p class="help" id="link-price-help">Converted into the token at each visit from Chainlink price feeds (test mode: fixed sandbox rates); the payment page shows the rate.</p>
</fieldset>
<fieldset class="stack pairs"><legend>The customer pays with</legend>
<input type="hidden" name="pairsShown" value="1">
${pairs.length ? pairBoxes(pairs, values, true, `Every chain and token you can receive in ${mode} mode. One ticked: no choice; several: the customer chooses at the visit, and a payment is created only then.`) : pairBoxes(everyPair(), values, false, `You cannot receive any chain and token in ${mode} mode with your wallets yet: add a receiving wallet under Settings, or tick one pair and name its receiving wallet below.`)}
</fieldset>
<label for="link-description">Description (optional)</label>
<input id="link-description" name="description" autocomplete="off" maxlength="500" value="${values.description ?? ''}">
<label for="link-items">Line items (optional, one "2 x Mug = 12.50" a line; with an amount, they must add up to it)</label>
<textarea id="link-items" name="lineItems" rows="3">${values.lineItems ?? ''}</textarea>
<label for="link-wallet">Receiving wallet (empty: your default wallet on the chain; one chain and token only)</label>
<input id="link-wallet" name="merchantWallet" autocomplete="off" value="${values.merchantWallet ?? ''}">
<label for="link-expires">Checkout lifetime in seconds (empty: 3600)</label>
<input id="link-expires" name="expiresIn" inputmode="numeric" autocomplete="off" value="${values.expiresIn ?? ''}">
<label for="link-success">Success URL (optional)</label>
<input id="link-success" name="successUrl" type="url" autocomplete="off" value="${values.successUrl ?? ''}">
<label for="link-cancel">Cancel URL (optional)</label>
<input id="link-cancel" name="cancelUrl" type="url" autocomplete="off" value="${values.cancelUrl ?? ''}">
<label for="link-webhook">Webhook URL (optional)</label>
<input id="link-webhook" name="webhookUrl" type="url" autocomplete="off" value="${values.webhookUrl ?? ''}">
<label for="link-metadata">Metadata (one key=value a line, optional)</label>
<textarea id="link-metadata" name="metadata" rows="3">${values.metadata ?? ''}</textarea>
<label><input type="checkbox" name="x402Discoverable" value="on"${values.x402Discoverable ? html` checked` : ''} aria-describedby="link-discoverable-help"> List in x402 discovery</label>
<p class="help" id="link-discoverable-help">Agents find the link at /discovery/resources (live links, where x402 is enabled): its price, wallet, description and your name become public.</p>
<button type="submit">Create link</button>
</form>`;
}
