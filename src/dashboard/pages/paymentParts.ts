import { statusB } from '../../api/views.ts';
import { CURRENCIES, explorerTxUrl, loadChains } from '../../internal/chains.ts';
import { CHAIN_NAMES, type ChainName } from '../../internal/config.ts';
import { formatDisplayAmount } from '../../internal/money.ts';
import type { Session } from '../../payments/session.ts';
import type { SessionFilter } from '../../payments/sessions.ts';
import { html, safeHref, type Html } from '../html.ts';

/**
 * What the payments pages share: the list's filters (read from the query string, so a filtered
 * view is a link), the status badge, money cells and explorer links. Money is always formatted
 * from bigint base units by formatDisplayAmount (at least cents: "19.90"), never through a JS number.
 */

/** Interface B's states, the ones the filter offers (`pending` includes sessions in state `created`). */
export const STATUSES_B = ['pending', 'confirming', 'confirmed', 'settled', 'expired', 'failed'] as const;

/**
 * How often an open first page of the list, and an open payment's page, ask for fresh rows (htmx
 * polling of a fragment; docs/dashboard.md says why not SSE). One indexed read per open page.
 */
export const LIVE_POLL_SECONDS = 3;

/** Rows per page of the payments list. */
export const PAGE_SIZE = 25;

/** The list's filters as the query string carries them (all optional text). */
export interface PaymentQuery {
  status: string;
  chain: string;
  currency: string;
  /** YYYY-MM-DD, inclusive, UTC. */
  from: string;
  /** YYYY-MM-DD, inclusive, UTC. */
  to: string;
  /** Search: a payment id, a transaction hash or a metadata value. */
  q: string;
  /** Cursor: the last id of the previous page. */
  after: string;
  /** Link visits without payment (issue 27): '' left out, `all` listed with the rest, `only` alone. */
  visits: string;
}

const QUERY_KEYS = ['status', 'chain', 'currency', 'from', 'to', 'q', 'visits', 'after'] as const satisfies readonly (keyof PaymentQuery)[];

export function readPaymentQuery(query: Record<string, string | undefined>): PaymentQuery {
  const read = (name: string) => (typeof query[name] === 'string' ? query[name]!.trim().slice(0, 200) : '');
  return Object.fromEntries(QUERY_KEYS.map((key) => [key, read(key)])) as unknown as PaymentQuery;
}

/** The query string of `query` with `changes` applied (empty values left out), `?`-prefixed or ''. */
export function paymentQueryString(query: PaymentQuery, changes: Partial<PaymentQuery> = {}): string {
  const merged = { ...query, ...changes };
  const params = new URLSearchParams();
  for (const key of QUERY_KEYS) if (merged[key]) params.set(key, merged[key]);
  const text = params.toString();
  return text ? `?${text}` : '';
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function day(text: string, name: string): Date | string {
  const match = DAY.exec(text);
  const date = match ? new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))) : undefined;
  if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text || date.getUTCFullYear() < 1) {
    return `${name} must be a date such as 2026-01-31`;
  }
  return date;
}

/**
 * The list filter the query asks for (scoped to the signed-in merchant and mode), or the first
 * problem with it, said like the API's 400s. The date range is whole UTC days, both inclusive.
 */
export function sessionFilterOf(
  query: PaymentQuery,
  scope: { merchantId: string; livemode: boolean },
): { filter: Omit<SessionFilter, 'limit'> } | { error: string } {
  if (query.status && !(STATUSES_B as readonly string[]).includes(query.status)) return { error: `status must be one of ${STATUSES_B.join(', ')}` };
  if (query.chain && !(CHAIN_NAMES as readonly string[]).includes(query.chain)) return { error: `chain must be one of ${CHAIN_NAMES.join(', ')}` };
  if (query.currency && !(CURRENCIES as readonly string[]).includes(query.currency)) return { error: `currency must be one of ${CURRENCIES.join(', ')}` };
  if (query.visits && query.visits !== 'all' && query.visits !== 'only') return { error: 'visits must be all or only' };
  const from = query.from ? day(query.from, 'from') : null;
  if (typeof from === 'string') return { error: from };
  const to = query.to ? day(query.to, 'to') : null;
  if (typeof to === 'string') return { error: to };
  return {
    filter: {
      ...scope,
      statuses: !query.status ? null : query.status === 'pending' ? ['created', 'pending'] : [query.status],
      chain: query.chain || undefined,
      currency: query.currency || undefined,
      createdGte: from,
      createdLt: to ? new Date(to.getTime() + 86_400_000) : null,
      search: query.q || undefined,
      // A search names one payment: found whatever it is; otherwise link visits without payment are left out unless asked for.
      linkVisits: query.q || query.visits === 'all' ? 'include' : query.visits === 'only' ? 'only' : 'hide',
      startingAfter: query.after || undefined,
    },
  };
}

/** A payment's Interface B status as a badge (text, not colour alone, carries the meaning). */
export function statusBadge(status: string): Html {
  const shown = statusB(status);
  return html`<span class="badge status status-${shown}">${shown}</span>`;
}

/** Base units as decimal text with the currency, at least cents ("12.50 USDC"). */
export function money(units: bigint, decimals: number, currency: string): Html {
  return html`<span class="money">${formatDisplayAmount(units, decimals)} <span class="currency">${currency}</span></span>`;
}

/** A transaction hash, linked to the chain's explorer in live mode (sandbox hashes are simulated: no explorer knows them). */
export function txLink(chain: ChainName, txHash: string, livemode: boolean): Html {
  const url = livemode ? explorerTxUrl(loadChains()[chain], txHash) : undefined;
  const short = txHash.length > 20 ? `${txHash.slice(0, 10)}…${txHash.slice(-8)}` : txHash;
  if (!url) return html`<code title="${txHash}">${short}</code>${livemode ? '' : html` <span class="help">(simulated)</span>`}`;
  return html`<a href="${safeHref(url)}" rel="noopener noreferrer" target="_blank"><code>${short}</code><span class="sr-only"> (opens the block explorer)</span></a>`;
}

/** An address shortened for a table cell (`0x5a4d…aceD`), the whole of it in the title and for screen readers. */
export function shortAddress(address: string | null): Html {
  if (!address) return html`<span class="help">unknown</span>`;
  if (address.length <= 14) return html`<code>${address}</code>`;
  return html`<code title="${address}" aria-label="${address}">${address.slice(0, 6)}…${address.slice(-4)}</code>`;
}

/** A date as UTC text that sorts and reads the same everywhere (no locale on the server). */
export function when(date: Date | null | undefined): string {
  return date ? `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '';
}

/**
 * The payments table (the list page, its live fragment, Home's recent payments). On phones
 * (dashboard.css `table.stacked`) each row is a card of labelled lines, so nothing scrolls sideways.
 */
export function paymentsTable(sessions: Session[]): Html {
  if (sessions.length === 0) return html`<p class="empty">No payments match.</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Payments"><table class="payments stacked">
<caption class="sr-only">Payments, newest first</caption>
<thead><tr><th scope="col">Payment</th><th scope="col">Status</th><th scope="col">Amount</th><th scope="col">Received</th><th scope="col">Chain</th><th scope="col">Created</th></tr></thead>
<tbody>${sessions.map(
    (s) => html`<tr data-payment="${s.id}">
<td><a href="/dashboard/payments/${s.id}"><code>${s.id}</code></a>${Object.keys(s.metadata).length ? html`<div class="meta">${metadataText(s.metadata)}</div>` : ''}</td>
<td data-label="Status">${statusBadge(s.status)}</td>
<td data-label="Amount">${money(s.amount, s.decimals, s.currency)}</td>
<td data-label="Received">${money(s.amountReceived, s.decimals, s.currency)}${s.amountPending > 0n ? html`<div class="help">+ ${formatDisplayAmount(s.amountPending, s.decimals)} pending</div>` : ''}</td>
<td data-label="Chain">${s.chain}</td>
<td data-label="Created">${when(s.createdAt)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

/** Metadata as `key: value` pairs, shortened for a table cell. */
export function metadataText(metadata: Record<string, string>): string {
  const text = Object.entries(metadata)
    .map(([key, value]) => `${key}: ${value}`)
    .join(', ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
