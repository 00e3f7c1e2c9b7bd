import fs from 'node:fs';
import { Type, type Static } from 'typebox';
import type { ChainName } from '../internal/config.ts';
import { CURRENCIES } from '../internal/chains.ts';
import { CHAIN_NAMES } from '../internal/config.ts';
import { supportUrlFor } from '../accounts/brand.ts';
import { pairName, type PaymentOption } from '../payments/options.ts';
import { unquotedCosts, type OptionCost } from '../payments/choicePrices.ts';
import { PriceViewSchema } from '../pricing/schemas.ts';
import { choiceExpired, type PendingChoice } from '../payments/choices.ts';
import type { SessionMerchantBrand } from '../payments/sessions.ts';
import { CHAIN_DISPLAY_NAMES, checkoutUrls } from './instructions.ts';
import { escapeHtml } from './qr.ts';
import { brandStyle, brandStyleTag, cancelLink, supportLine } from './brandParts.ts';

/**
 * The customer's choice of chain and token (issue 26), on the payer's side: what a session waiting
 * for the choice shows (the page's chooser and the machine-readable options an agent reads), and
 * how the page posts the choice. The choice itself is src/payments/choices.ts's.
 */

const STYLE = fs.readFileSync(new URL('./assets/checkout.css', import.meta.url), 'utf8');

/** The chooser's own styles (pinned by hash in the page's CSP like the rest). */
export const CHOOSER_STYLE =
  '.options{border:0;padding:0;margin:1rem 0}.options legend{font-weight:600;margin-bottom:.5rem}.option{display:flex;gap:.75rem;align-items:flex-start;border:1px solid #c9ced6;border-radius:8px;padding:.75rem;margin:.5rem 0;cursor:pointer}.option:has(input:checked){border-color:currentColor;outline:2px solid currentColor}.option input{margin-top:.25rem;width:auto;flex:none}.option .cost{font-weight:600}.option .gas{display:block;font-size:.875rem;color:#4b5563}';

/**
 * What each chain's network fee is paid in, for the chooser: a short, honest note (the payer's
 * wallet pays it; the gateway never does, except x402's relayer). No figures that could go stale.
 */
export const GAS_NOTES: Record<ChainName, string> = {
  polygon: 'Network fee paid in POL, usually well under a cent.',
  base: 'Network fee paid in ETH on Base, usually under a cent.',
  arbitrum: 'Network fee paid in ETH on Arbitrum, usually under a cent.',
  optimism: 'Network fee paid in ETH on OP Mainnet, usually under a cent.',
  bsc: 'Network fee paid in BNB, usually a few cents.',
  solana: 'Network fee paid in SOL, a fraction of a cent.',
};

/** One option as the payer reads it. */
const ChoiceOptionSchema = Type.Object(
  {
    chain: Type.String({ description: 'Chain name (`base`, `polygon`, …).' }),
    chainName: Type.String({ description: 'The chain as people know it.' }),
    currency: Type.String({ description: 'USDT or USDC.' }),
    amount: Type.Union([Type.String(), Type.Null()], {
      description:
        'What this option costs, in token units (decimal text). With a fiat `price`: indicative, at the Chainlink rate when this answer was made (`indicative: true`); the amount to pay is fixed when the option is chosen. Null when the rate cannot be read right now (choosing then answers 422 or 503).',
    }),
    price: PriceViewSchema,
    rate: Type.Union([Type.String(), Type.Null()], {
      description: 'With a fiat price: token units per one unit of the fiat currency behind the indicative `amount`; null otherwise.',
    }),
    indicative: Type.Boolean({ description: 'True when `amount` is an estimate from a fiat price, fixed only when the option is chosen.' }),
    gasNote: Type.String({ description: "What the payer's wallet pays the network fee in." }),
    x402: Type.Boolean({ description: 'Whether the x402 challenge of this session offers this option.' }),
  },
  { additionalProperties: false },
);

/** The machine-readable form of a session waiting for its customer's choice. */
export const PaymentChoiceSchema = Type.Object(
  {
    object: Type.Literal('payment_choice'),
    id: Type.String(),
    status: Type.String({ description: '`created` until expiry, then `expired`.' }),
    view: Type.Unsafe<string>({ type: 'string', enum: ['choosing', 'expired'] }),
    livemode: Type.Boolean(),
    merchant: Type.Object({
      name: Type.String(),
      supportEmail: Type.Union([Type.String(), Type.Null()]),
      supportUrl: Type.Union([Type.String(), Type.Null()]),
    }),
    description: Type.Union([Type.String(), Type.Null()]),
    options: Type.Array(ChoiceOptionSchema, { description: 'Every accepted (chain, currency) pair with what it costs.' }),
    chooseUrl: Type.String({
      format: 'uri',
      description: 'POST `{ "chain", "currency" }` here to fix the choice; then GET `checkoutUrl` for the payment instructions.',
    }),
    checkoutUrl: Type.String({ format: 'uri' }),
    x402Url: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
      description: 'Pay with x402 instead: its 402 challenge lists the options x402 can pay.',
    }),
    cancelUrl: Type.Union([Type.String(), Type.Null()]),
    expiresAt: Type.String({ format: 'date-time' }),
    serverTime: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'A checkout session waiting for the customer to choose the chain and token (docs/checkout.md).' },
);
export type PaymentChoice = Static<typeof PaymentChoiceSchema>;

/** A waiting session as the payer's side reads it. */
export type ChooserSession = PendingChoice & { merchantName: string; merchantBrand: SessionMerchantBrand };

/**
 * Every option of a waiting session (or a link) with what it costs, in the order the merchant
 * gave: a token amount as is; a fiat price with `costs`, the indicative amounts quoted for this
 * answer (src/payments/choicePrices.ts's optionCosts), or without them the price alone.
 */
export function choiceOptions(
  choice: Pick<PendingChoice, 'paymentOptions' | 'terms' | 'price'>,
  x402Pairs: readonly PaymentOption[] = [],
  quoted?: readonly OptionCost[],
): PaymentChoice['options'] {
  const costs = quoted ?? unquotedCosts({ amount: choice.terms.amount, price: choice.price }, choice.paymentOptions);
  return choice.paymentOptions.map((pair, i) => ({
    chain: pair.chain,
    chainName: CHAIN_DISPLAY_NAMES[pair.chain],
    currency: pair.currency,
    // At least the currency's two decimals, as the page shows amounts ("25.00").
    ...costs[i]!,
    gasNote: GAS_NOTES[pair.chain],
    x402: x402Pairs.some((other) => other.chain === pair.chain && other.currency === pair.currency),
  }));
}

/** The machine-readable choice of a waiting session (GET /checkout/{id} with Accept: application/json). */
export function buildChoice(
  session: ChooserSession,
  params: { publicUrl: string; x402Url: string | null; x402Pairs?: readonly PaymentOption[]; costs?: readonly OptionCost[] },
): PaymentChoice {
  const urls = checkoutUrls(params.publicUrl, session.id);
  const expired = choiceExpired(session);
  return {
    object: 'payment_choice',
    id: session.id,
    status: expired ? 'expired' : 'created',
    view: expired ? 'expired' : 'choosing',
    livemode: session.livemode,
    merchant: {
      name: session.merchantName,
      supportEmail: session.merchantBrand.supportEmail,
      supportUrl: supportUrlFor(session.merchantBrand, session.livemode),
    },
    description: session.terms.description ?? null,
    options: choiceOptions(session, params.x402Pairs, params.costs),
    chooseUrl: `${urls.checkoutUrl}/choice`,
    checkoutUrl: urls.checkoutUrl,
    x402Url: expired ? null : params.x402Url,
    cancelUrl: session.terms.cancelUrl ?? null,
    expiresAt: session.expiresAt.toISOString(),
    serverTime: session.now.toISOString(),
  };
}

/** Parses a choice: JSON `{ chain, currency }` or the chooser form's `option=chain:currency`; 400 for anything else (a pair off the list is the caller's 400). */
export function parseChoiceBody(body: unknown): PaymentOption | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const fields = body as Record<string, unknown>;
  let chain = fields.chain;
  let currency = fields.currency;
  if (typeof fields.option === 'string') [chain, currency] = fields.option.split(':');
  if (!CHAIN_NAMES.includes(chain as ChainName) || !CURRENCIES.includes(currency as never)) return undefined;
  return { chain: chain as ChainName, currency: currency as PaymentOption['currency'] };
}

/** What the chooser page shows: a waiting session's, or a payment link's before any session exists. */
export type ChooserView = Pick<ChooserSession, 'paymentOptions' | 'terms' | 'price' | 'livemode' | 'merchantName' | 'merchantBrand'> & { expired: boolean };

/** A waiting session as the chooser page shows it. */
export function chooserViewOf(session: ChooserSession): ChooserView {
  return { ...session, expired: choiceExpired(session) };
}

/** What an option costs, for people: "25.00 USDC"; with a price "about 52.92 USDC, fixed when you choose" (or the price alone when no rate can be read). */
function costText(option: PaymentChoice['options'][number]): string {
  if (!option.indicative) return `${option.amount} ${option.currency}`;
  const price = `${option.price!.amount} ${option.price!.currency}`;
  if (option.amount === null) return `${price} in ${option.currency}, converted when you choose`;
  return `about ${option.amount} ${option.currency}, fixed when you choose`;
}

/** The merchant as the chooser page shows it (no logo: it is served per chosen session). */
function merchantOf(session: ChooserView) {
  return {
    name: session.merchantName,
    logoUrl: null,
    accentColor: session.merchantBrand.accentColor,
    supportEmail: session.merchantBrand.supportEmail,
    supportUrl: supportUrlFor(session.merchantBrand, session.livemode),
  };
}

/** The extra inline styles the chooser page carries, for its CSP. */
export function chooserStyles(session: ChooserView): string[] {
  return [CHOOSER_STYLE, brandStyle(merchantOf(session))];
}

/**
 * The chooser page: who is paid and for what, then one radio per option (token and chain, what it
 * costs, the network-fee note) in a fieldset with a legend, and a submit button. A plain form
 * posting to `action` (no script needed), so it works with the strict CSP and without JavaScript.
 */
export function renderChooserPage(session: ChooserView, params: { action: string; title?: string; costs?: readonly OptionCost[] }): string {
  const merchant = merchantOf(session);
  const options = choiceOptions(session, [], params.costs);
  const expired = session.expired;
  const radios = options
    .map((option, i) => {
      const id = `option-${option.chain}-${option.currency}`;
      const pair = pairName(option as PaymentOption);
      return `<label class="option" for="${id}"><input type="radio" name="option" id="${id}" value="${option.chain}:${option.currency}"${i === 0 ? ' required' : ''} aria-describedby="${id}-gas">
<span><span class="pair">${escapeHtml(option.currency)} on ${escapeHtml(option.chainName)}</span> · <span class="cost" data-pair="${escapeHtml(pair)}">${escapeHtml(costText(option))}</span>
<span class="gas" id="${id}-gas">${escapeHtml(option.gasNote)}</span></span></label>`;
    })
    .join('\n');
  const priced = session.price
    ? `<p class="price" id="price">Price: <strong>${escapeHtml(session.price.amount)} ${escapeHtml(session.price.currency)}</strong>. Token amounts are indicative, at ${session.livemode ? 'the current Chainlink rate' : "the sandbox's fixed rate"}; the amount to pay is fixed when you choose.</p>`
    : '';
  const description = `${session.terms.description ? `<p class="description">${escapeHtml(session.terms.description)}</p>` : ''}${priced}`;
  const body = expired
    ? `<p role="status">This payment request has expired. Return to the merchant for a new one.</p>`
    : `<form method="post" action="${escapeHtml(params.action)}" id="chooser">
<fieldset class="options"><legend>Choose how to pay</legend>
${radios}
</fieldset>
<button type="submit" id="choose">Continue</button>
<p class="note">Your choice is final for this payment: the next page shows where and how much to send.</p>
</form>`;
  const cancel = cancelLink({ cancelUrl: session.terms.cancelUrl ?? null, merchant, view: expired ? 'expired' : 'awaiting' });
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>${escapeHtml(params.title ?? `Pay ${merchant.name}`)}</title><style>${STYLE}</style><style>${CHOOSER_STYLE}</style>${brandStyleTag(merchant)}</head>
<body><main class="checkout"><div class="card">
<h1>Pay ${escapeHtml(merchant.name)}</h1>
${description}
${body}
${cancel}
${supportLine(merchant)}
${session.livemode ? '' : '<p class="sandbox-note">Sandbox session: no real funds move.</p>'}
</div></main></body>
</html>`;
}
