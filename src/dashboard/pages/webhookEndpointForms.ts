import { MAX_REPLAY_EVENTS, type WebhookEndpoint } from '../../delivery/index.ts';
import { html, type Html } from '../html.ts';
import type { DashboardContext } from '../routes.ts';
import { eventCheckboxes, overlapSelect } from './webhookViews.ts';

/**
 * The forms of one webhook endpoint's page (webhooks.ts): each posts to a route there, with the
 * CSRF field; the routes check the permission and, for new URLs and secrets, a recent password.
 */

/** Send a test event, enable or disable, delete: the endpoint page's buttons. */
export function actionButtons(ctx: DashboardContext, endpoint: WebhookEndpoint): Html {
  const base = `/dashboard/webhooks/${endpoint.id}`;
  return html`<div class="actions inline">
  <form method="post" action="${base}/test">${ctx.csrfField()}<button type="submit"${endpoint.status === 'enabled' ? '' : html` disabled`}>Send test event</button></form>
  <form method="post" action="${base}/status">${ctx.csrfField()}
    <input type="hidden" name="status" value="${endpoint.status === 'enabled' ? 'disabled' : 'enabled'}">
    <button type="submit" class="secondary">${endpoint.status === 'enabled' ? 'Disable' : 'Enable'}</button></form>
  <form method="post" action="${base}/delete" data-confirm="Delete this endpoint? Deliveries to it stop at once.">${ctx.csrfField()}<button type="submit" class="danger">Delete</button></form>
</div>`;
}

/** Edit, rotate the secret, replay a window: the endpoint page's forms for those who may manage webhooks. */
export function manageForms(ctx: DashboardContext, endpoint: WebhookEndpoint): Html {
  const base = `/dashboard/webhooks/${endpoint.id}`;
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
  return html`<section class="panel" aria-labelledby="edit-title">
  <h2 id="edit-title">Edit</h2>
  <form method="post" action="${base}/edit" class="stack">
    ${ctx.csrfField()}
    <label for="edit-url">Endpoint URL</label>
    <input id="edit-url" name="url" type="url" required maxlength="2048" value="${endpoint.url}">
    <label for="edit-description">Description</label>
    <input id="edit-description" name="description" maxlength="500" value="${endpoint.description ?? ''}">
    ${eventCheckboxes('edit-event', endpoint.enabledEvents)}
    <button type="submit">Save</button>
  </form>
</section>
<section class="panel" aria-labelledby="rotate-title">
  <h2 id="rotate-title">Rotate signing secret</h2>
  <p class="help">Makes a new secret, shown once. During the overlap every delivery carries two signatures (new first), so receivers verify with either while you deploy the new one.</p>
  <form method="post" action="${base}/rotate" class="stack">
    ${ctx.csrfField()}
    ${overlapSelect('rotate-overlap')}
    <button type="submit" class="secondary">Rotate secret</button>
  </form>
</section>
<section class="panel" aria-labelledby="replay-title">
  <h2 id="replay-title">Replay a time window</h2>
  <p class="help">Sends every event of this mode created in the window that the endpoint subscribes to and has not received (none delivered or still being tried), oldest first, as new deliveries (at most ${MAX_REPLAY_EVENTS}). Replaying the same window again sends nothing twice.</p>
  <form method="post" action="${base}/replay" class="inline">
    ${ctx.csrfField()}
    <div class="stack"><label for="replay-from">From (UTC)</label><input id="replay-from" name="from" type="datetime-local" required value="${hourAgo}"></div>
    <div class="stack"><label for="replay-to">To (UTC, empty: now)</label><input id="replay-to" name="to" type="datetime-local"></div>
    <button type="submit" class="secondary">Replay</button>
  </form>
</section>`;
}
