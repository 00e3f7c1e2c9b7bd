import { refusalAnswer } from '../../api/httpErrors.ts';
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  SUBSCRIBABLE_EVENTS,
  type AttemptLogRecord,
  type DeliveryRecord,
  type Owner,
  type WebhookEndpoint,
} from '../../delivery/index.ts';
import { WEBHOOK_HEADERS } from '../../receiver/verify.ts';
import { errorBox } from '../forms.ts';
import { html, type Html } from '../html.ts';
import type { DashboardContext } from '../routes.ts';

/** Markup shared by the webhook pages (webhooks.ts, webhookDeliveries.ts). */

/** Whose endpoints the page shows: the signed-in merchant, in the mode of the toggle. */
export const ownerOf = (ctx: DashboardContext): Owner => ({ merchantId: ctx.merchant.id, livemode: ctx.livemode });

/** A time as UTC, to the second (the same instant the API shows in ISO 8601). */
export function when(date: Date | null): Html {
  if (!date) return html`<span class="help">—</span>`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

/**
 * Runs a form's action; a refusal becomes the API's status and `error` text, shown inline with
 * the form (tryForm with the status, so a refused form answers 4xx like the API).
 */
export async function tryAction<T>(action: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; status: number; error: string }> {
  try {
    return { ok: true, value: await action() };
  } catch (error) {
    const answer = refusalAnswer(error);
    if (!answer) throw error;
    return { ok: false, status: answer.status, error: answer.body.error };
  }
}

/**
 * The subscribed kinds from a form: one checkbox per kind, named `event.<kind>` (the dashboard's
 * form parser keeps one value per name, so the kinds are in the names).
 */
export function eventsOf(body: Record<string, string | undefined> | undefined): string[] {
  return Object.keys(body ?? {})
    .filter((name) => name.startsWith('event.'))
    .map((name) => name.slice('event.'.length));
}

/** Checkboxes for the event kinds (`*` first: every kind, including kinds added later). */
export function eventCheckboxes(idPrefix: string, checked: readonly string[]): Html {
  const boxes = SUBSCRIBABLE_EVENTS.map((kind) => {
    const id = `${idPrefix}-${kind.replace(/[^a-z0-9]/gi, '-')}`;
    return html`<label class="check" for="${id}"><input type="checkbox" id="${id}" name="event.${kind}" value="on"${checked.includes(kind) ? html` checked` : ''}> ${kind === '*' ? 'Every event kind (*), including kinds added later' : kind}</label>`;
  });
  return html`<fieldset class="events"><legend>Events to send</legend>${boxes}</fieldset>`;
}

/** The overlap choice of a rotation: how long the replaced secret keeps signing beside the new one. */
export function overlapSelect(id: string): Html {
  const choices: [number, string][] = [
    [DEFAULT_ROTATION_OVERLAP_SECONDS, '24 hours (default)'],
    [3_600, '1 hour'],
    [0, 'Stop it now (it leaked)'],
  ];
  return html`<label for="${id}">Old secret keeps signing for</label>
<select id="${id}" name="expiresIn">${choices.map(([seconds, label]) => html`<option value="${seconds}">${label}</option>`)}</select>`;
}

/** The overlap a form chose, as the API's `expiresIn` (seconds); NaN is refused by the domain rule. */
export function overlapOf(value: string): number {
  return value === '' ? DEFAULT_ROTATION_OVERLAP_SECONDS : /^\d+$/.test(value) ? Number(value) : Number.NaN;
}

/** A new secret, shown this once, with a copy button. */
export function secretOnce(secret: string, previousUntil: Date | null): Html {
  return html`<section class="panel stack-wide" aria-labelledby="secret-title">
  <h2 id="secret-title">New signing secret</h2>
  <p><strong>Copy it now: it is shown only this once.</strong> The gateway keeps it sealed and never shows it again; if you lose it, rotate.</p>
  <code class="secret" id="new-secret">${secret}</code>
  <p><button type="button" class="secondary" data-copy="new-secret">Copy secret</button></p>
  ${previousUntil ? html`<p class="help">The previous secret keeps signing beside it until ${when(previousUntil)}: every delivery meanwhile carries two signatures, so receivers verify with either.</p>` : ''}
</section>`;
}

export function statusBadge(endpoint: WebhookEndpoint): Html {
  return endpoint.status === 'enabled' ? html`<span class="badge live">enabled</span>` : html`<span class="badge off">disabled</span>`;
}

export function deliveryBadge(delivery: DeliveryRecord): Html {
  const kind = delivery.status === 'succeeded' ? 'live' : delivery.status === 'failed' ? 'danger' : 'test';
  return html`<span class="badge ${kind}">${delivery.status}</span>`;
}

/** Which signatures an attempt carried, never their values (docs/security.md). */
export function signaturesText(count: number | null): string {
  if (count === 1) return '1 signature (sha256, the current secret); its value is never kept';
  if (count === 2) return "2 signatures (sha256: the new secret's first, then the replaced secret's, during a rotation's overlap); their values are never kept";
  return 'not recorded (attempt logged before the gateway recorded it); values are never kept';
}

/**
 * One attempt as the signed-in role may see it (`attemptAsShown`, as the API shows it to a key
 * of that scope): a viewer, like a read-only key, sees how it went; owners and developers also the
 * request's headers and body. Nobody sees a signature.
 */
export function attemptView(
  attempt: Omit<AttemptLogRecord, 'requestHeaders' | 'requestBody'> & { requestHeaders?: Record<string, string>; requestBody?: string },
): Html {
  const outcome = attempt.responseStatus !== null ? `HTTP ${attempt.responseStatus}` : (attempt.error ?? 'no answer');
  const headers = attempt.requestHeaders
    ? html`<h4>Request headers</h4>
<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table class="headers"><tbody>
${Object.entries(attempt.requestHeaders).map(([name, value]) => html`<tr><th scope="row">${name}</th><td><code>${value}</code></td></tr>`)}
<tr><th scope="row">${WEBHOOK_HEADERS.signature}</th><td>${signaturesText(attempt.signaturesSent)}</td></tr>
</tbody></table></div>
<h4>Request body</h4><pre class="excerpt" tabindex="0">${attempt.requestBody ?? ''}</pre>`
    : html`<p class="help">Signatures: ${signaturesText(attempt.signaturesSent)}. Your role sees how the attempt went, not the request (like a read-only API key).</p>`;
  return html`<article class="panel attempt" aria-labelledby="attempt-${attempt.id}">
  <h3 id="attempt-${attempt.id}">Attempt ${attempt.attemptNumber}: ${attempt.succeeded ? 'delivered' : 'failed'} (${outcome})</h3>
  <dl class="facts">
    <dt>Started</dt><dd>${when(attempt.startedAt)}</dd>
    <dt>Took</dt><dd>${attempt.durationMs} ms</dd>
    <dt>Response status</dt><dd>${attempt.responseStatus ?? '—'}</dd>
    ${attempt.error ? html`<dt>Error</dt><dd>${attempt.error}</dd>` : ''}
  </dl>
  ${headers}
  <h4>Response body (first 2 KiB, anything shaped like a signature redacted)</h4>
  <pre class="excerpt" tabindex="0">${attempt.responseBodyExcerpt ?? ''}</pre>
</article>`;
}

export { errorBox };
