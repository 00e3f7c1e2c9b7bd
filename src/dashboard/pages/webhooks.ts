import {
  changeEndpoint,
  deleteEndpoint,
  getEndpoint,
  getMerchantSecretInfo,
  listDeliveries,
  listEndpoints,
  previousSecretSignsUntil,
  registerEndpoint,
  replayWindow,
  rotateSessionSecret,
  rotateSigningSecret,
  sendTestEvent,
} from '../../delivery/index.ts';
import { notFound } from '../../internal/errors.ts';
import { field, noticeBox } from '../forms.ts';
import { html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardDeps, type DashboardPageModule } from '../routes.ts';
import {
  deliveryBadge,
  errorBox,
  eventCheckboxes,
  eventsOf,
  overlapOf,
  overlapSelect,
  ownerOf,
  secretOnce,
  statusBadge,
  tryAction,
  when,
} from './webhookViews.ts';
import { actionButtons, manageForms } from './webhookEndpointForms.ts';

/**
 * Webhooks (issue 15): the endpoints of the mode shown, each with its settings, secret rotation,
 * test event, replay and deliveries (their attempts: webhookDeliveries.ts), and the merchant's
 * secret of per-session webhookUrls. Every action is the API's domain function
 * (src/delivery/manage.ts); new URLs and secrets want the password entered in the last 10 minutes.
 */

const MANAGE = { nav: 'webhooks', permission: 'webhooks.manage' } as const;
const DELIVERIES_PER_PAGE = 20;

/** Notes after a redirect, by key: the query never carries text to show. */
const DONE: Record<string, string> = {
  updated: 'Endpoint saved.',
  enabled: 'Endpoint enabled. Events missed while it was disabled were not resent: replay them below.',
  disabled: 'Endpoint disabled: no more deliveries; pending ones ended.',
  deleted: 'Endpoint deleted. Its deliveries stay readable through the events API.',
  test: 'Test event queued: it is sent within a second; its delivery is at the top of the list.',
  replayed: 'Replay queued.',
};

function modeName(ctx: DashboardContext): string {
  return ctx.livemode ? 'live' : 'test';
}

async function listPage(
  ctx: DashboardContext,
  params: { error?: string; input?: { url: string; description: string; events: string[] }; notice?: string; status?: number },
) {
  const owner = ownerOf(ctx);
  const [endpoints, sessionSecret] = await Promise.all([listEndpoints(ctx.store, owner), getMerchantSecretInfo(ctx.store, owner)]);
  const manage = ctx.can('webhooks.manage');
  const rows = endpoints.map(
    (endpoint) => html`<tr>
  <td><a href="/dashboard/webhooks/${endpoint.id}">${endpoint.url}</a>${endpoint.description ? html`<br><span class="help">${endpoint.description}</span>` : ''}</td>
  <td>${statusBadge(endpoint)}${endpoint.failingSince ? html`<br><span class="help">failing since ${when(endpoint.failingSince)}</span>` : ''}</td>
  <td>${endpoint.enabledEvents.join(', ')}</td>
</tr>`,
  );
  const input = params.input ?? { url: '', description: '', events: ['*'] };
  const createForm = manage
    ? html`<section class="panel" aria-labelledby="add-title">
  <h2 id="add-title">Add an endpoint</h2>
  ${params.error ? errorBox(params.error) : ''}
  <form method="post" action="/dashboard/webhooks" class="stack">
    ${ctx.csrfField()}
    <label for="endpoint-url">Endpoint URL</label>
    <input id="endpoint-url" name="url" type="url" inputmode="url" required maxlength="2048" value="${input.url}" aria-describedby="endpoint-url-help">
    <p class="help" id="endpoint-url-help">${
      ctx.livemode
        ? 'A public https URL: live endpoints may not point at private, loopback or link-local addresses.'
        : 'Test endpoints may point at a local receiver (unless the operator turned that off).'
    }</p>
    <label for="endpoint-description">Description (optional)</label>
    <input id="endpoint-description" name="description" maxlength="500" value="${input.description}">
    ${eventCheckboxes('new-event', input.events)}
    <button type="submit">Add endpoint</button>
  </form>
</section>`
    : html`<p class="help">Your role (${ctx.user.role}) can read webhooks; owners and developers manage them.</p>`;
  const secretInfo = sessionSecret
    ? html`<p>Made ${when(sessionSecret.createdAt)}${sessionSecret.rotatedAt ? html`, last rotated ${when(sessionSecret.rotatedAt)}` : ''}.${
        sessionSecret.previousSecretExpiresAt ? html` The replaced secret still signs until ${when(sessionSecret.previousSecretExpiresAt)}.` : ''
      }</p>`
    : html`<p>No ${modeName(ctx)} session secret yet: one is made at the first delivery to a session's webhookUrl, and nobody has seen it. Rotate to get one you can use.</p>`;
  return page(
    'Webhooks',
    html`${params.notice ? noticeBox(params.notice) : ''}
<p class="help">Signed HTTP POSTs of ${modeName(ctx)} events to your endpoints (docs/webhooks.md). Switch the mode at the top to see the other mode's endpoints.</p>
<h2>Endpoints (${modeName(ctx)})</h2>
${
  endpoints.length
    ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table><thead><tr><th scope="col">URL</th><th scope="col">Status</th><th scope="col">Events</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p>No ${modeName(ctx)} endpoints yet.</p>`
}
${createForm}
<section class="panel" aria-labelledby="session-secret-title">
  <h2 id="session-secret-title">Session webhook secret (${modeName(ctx)})</h2>
  <p class="help">Signs deliveries to the <code>webhookUrl</code> of single checkout sessions (endpoints have their own secrets).</p>
  ${secretInfo}
  ${
    manage
      ? html`<form method="post" action="/dashboard/webhook-secret/rotate" class="stack">
    ${ctx.csrfField()}
    ${overlapSelect('session-overlap')}
    <button type="submit" class="secondary">Rotate session secret</button>
  </form>`
      : ''
  }
</section>`,
    { status: params.status },
  );
}

async function endpointPage(
  ctx: DashboardContext,
  id: string,
  query: Record<string, string | undefined>,
  params: { error?: string; status?: number; secret?: { value: string; previousUntil: Date | null } } = {},
) {
  const owner = ownerOf(ctx);
  const endpoint = await getEndpoint(ctx.store, owner, id);
  if (!endpoint) throw notFound(`no webhook endpoint ${id}`);
  const after = query.after;
  const [deliveries, previousUntil] = await Promise.all([
    listDeliveries(ctx.store, owner, { endpointId: id, limit: DELIVERIES_PER_PAGE + 1, startingAfter: after || undefined }),
    previousSecretSignsUntil(ctx.store, owner, id),
  ]);
  const shown = deliveries.slice(0, DELIVERIES_PER_PAGE);
  const manage = ctx.can('webhooks.manage');
  const done = query.done && DONE[query.done];
  const base = `/dashboard/webhooks/${id}`;
  return page(
    'Webhook endpoint',
    html`${done ? noticeBox(query.done === 'replayed' && /^\d+$/.test(query.count ?? '') ? `Replay queued: ${query.count} deliveries.` : done) : ''}
${params.error ? errorBox(params.error) : ''}
${params.secret ? secretOnce(params.secret.value, params.secret.previousUntil) : ''}
<p><a href="/dashboard/webhooks">All endpoints</a></p>
<dl class="facts">
  <dt>URL</dt><dd><code>${endpoint.url}</code></dd>
  <dt>Status</dt><dd>${statusBadge(endpoint)}${endpoint.disabledReason ? html` ${endpoint.disabledReason} (${when(endpoint.disabledAt)})` : ''}</dd>
  <dt>Mode</dt><dd>${endpoint.livemode ? 'live' : 'test'}</dd>
  <dt>Events</dt><dd>${endpoint.enabledEvents.join(', ')}</dd>
  <dt>Failing since</dt><dd>${when(endpoint.failingSince)}</dd>
  <dt>Signing secret</dt><dd>${previousUntil ? html`two secrets sign until ${when(previousUntil)} (rotation overlap)` : 'one secret signs'}; never shown again after it is made</dd>
  <dt>Created</dt><dd>${when(endpoint.createdAt)}</dd>
  <dt>Id</dt><dd><code>${endpoint.id}</code></dd>
</dl>
${manage ? actionButtons(ctx, endpoint) : ''}
<h2>Deliveries</h2>
${
  shown.length
    ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table><thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th></tr></thead><tbody>
${shown.map(
  (delivery) => html`<tr>
  <td><a href="${base}/deliveries/${delivery.id}">${when(delivery.createdAt)}</a></td>
  <td><code>${delivery.eventId}</code><br><span class="help">${delivery.origin}</span></td>
  <td>${deliveryBadge(delivery)}</td>
  <td>${delivery.attemptCount}</td>
  <td>${delivery.lastResponseStatus ?? delivery.lastError ?? '—'}</td>
</tr>`,
)}
</tbody></table></div>
${deliveries.length > DELIVERIES_PER_PAGE ? html`<p><a href="${base}?after=${shown[shown.length - 1]!.id}">Older deliveries</a></p>` : ''}`
    : html`<p>No deliveries yet. Send a test event to see one.</p>`
}
${manage ? manageForms(ctx, endpoint) : ''}`,
    { status: params.status },
  );
}

/** A `datetime-local` value (no zone) read as UTC, as the form says; anything else as the API reads it. */
function utcDate(value: string): Date {
  return new Date(/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(value) ? `${value}Z` : value);
}

export const webhookPages: DashboardPageModule = (routes, deps: DashboardDeps) => {
  routes.get('/webhooks', { nav: 'webhooks' }, async (ctx, request) => listPage(ctx, { notice: request.query.done === 'deleted' ? DONE.deleted : undefined }));

  routes.post('/webhooks', MANAGE, async (ctx, request) => {
    // A new URL where events (and the payments they report) go: money-routing.
    ctx.requireRecentPassword();
    const input = { url: field(request.body, 'url'), description: field(request.body, 'description'), events: eventsOf(request.body) };
    const created = await tryAction(() =>
      registerEndpoint(
        ctx.store,
        deps.box,
        deps.config,
        ownerOf(ctx),
        { url: input.url, description: input.description || null, enabledEvents: input.events },
        (sql, endpoint) =>
          ctx.audit('webhook.endpoint_created', { target: endpoint.id, details: { url: endpoint.url, enabledEvents: endpoint.enabledEvents }, sql }),
      ),
    );
    if (!created.ok) return listPage(ctx, { error: created.error, input, status: created.status });
    return endpointPage(ctx, created.value.endpoint.id, {}, { secret: { value: created.value.secret, previousUntil: null }, status: 201 });
  });

  routes.get<{ id: string }>('/webhooks/:id', { nav: 'webhooks' }, async (ctx, request) => endpointPage(ctx, request.params.id, request.query));

  routes.post<{ id: string }>('/webhooks/:id/edit', MANAGE, async (ctx, request) => {
    const { id } = request.params;
    const current = await getEndpoint(ctx.store, ownerOf(ctx), id);
    if (!current) throw notFound(`no webhook endpoint ${id}`);
    const url = field(request.body, 'url');
    // Pointing events somewhere else is money-routing; changing kinds or the description is not.
    if (url !== current.url) ctx.requireRecentPassword();
    const changes = {
      url: url === current.url ? undefined : url,
      description: field(request.body, 'description') || null,
      enabledEvents: eventsOf(request.body),
    };
    const details = (enabledEvents: string[]) => ({ ...(changes.url ? { url: changes.url, previousUrl: current.url } : {}), enabledEvents });
    const saved = await tryAction(() =>
      changeEndpoint(ctx.store, deps.config, ownerOf(ctx), id, changes, (sql, { enabledEvents }) =>
        ctx.audit('webhook.endpoint_updated', { target: id, sql, details: details(enabledEvents) }),
      ),
    );
    if (!saved.ok) return endpointPage(ctx, id, {}, { error: saved.error, status: saved.status });
    return redirect(`/dashboard/webhooks/${id}?done=updated`);
  });

  routes.post<{ id: string }>('/webhooks/:id/status', MANAGE, async (ctx, request) => {
    const { id } = request.params;
    const status = field(request.body, 'status') === 'enabled' ? 'enabled' : 'disabled';
    await changeEndpoint(ctx.store, deps.config, ownerOf(ctx), id, { status }, (sql) =>
      ctx.audit(status === 'disabled' ? 'webhook.endpoint_disabled' : 'webhook.endpoint_updated', { target: id, details: { status }, sql }),
    );
    return redirect(`/dashboard/webhooks/${id}?done=${status}`);
  });

  routes.post<{ id: string }>('/webhooks/:id/delete', MANAGE, async (ctx, request) => {
    const { id } = request.params;
    const deleted = await ctx.store.transaction(async (sql) => {
      const done = await deleteEndpoint(sql, ownerOf(ctx), id);
      if (done) await ctx.audit('webhook.endpoint_disabled', { target: id, details: { deleted: true }, sql });
      return done;
    });
    if (!deleted) throw notFound(`no webhook endpoint ${id}`);
    return redirect('/dashboard/webhooks?done=deleted');
  });

  routes.post<{ id: string }>('/webhooks/:id/rotate', { ...MANAGE, recentPassword: true }, async (ctx, request) => {
    const { id } = request.params;
    const expiresIn = overlapOf(field(request.body, 'expiresIn'));
    const rotated = await tryAction(() =>
      ctx.store.transaction(async (sql) => {
        const result = await rotateSigningSecret(sql, deps.box, ownerOf(ctx), id, expiresIn);
        await ctx.audit('webhook.secret_rotated', { target: id, details: { expiresIn }, sql });
        return result;
      }),
    );
    if (!rotated.ok) {
      if (rotated.status === 404) throw notFound(rotated.error);
      return endpointPage(ctx, id, {}, { error: rotated.error, status: rotated.status });
    }
    return endpointPage(ctx, id, {}, { secret: { value: rotated.value.secret, previousUntil: rotated.value.previousSecretExpiresAt } });
  });

  routes.post<{ id: string }>('/webhooks/:id/test', MANAGE, async (ctx, request) => {
    const { id } = request.params;
    const sent = await tryAction(() => sendTestEvent(ctx.store, ownerOf(ctx), id));
    if (!sent.ok) {
      if (sent.status === 404) throw notFound(sent.error);
      return endpointPage(ctx, id, {}, { error: sent.error, status: sent.status });
    }
    return redirect(`/dashboard/webhooks/${id}?done=test`);
  });

  routes.post<{ id: string }>('/webhooks/:id/replay', MANAGE, async (ctx, request) => {
    const { id } = request.params;
    const toText = field(request.body, 'to');
    const window = { from: utcDate(field(request.body, 'from')), to: toText ? utcDate(toText) : new Date() };
    const replay = { from: window.from.toISOString(), to: window.to.toISOString() };
    const replayed = await tryAction(() =>
      replayWindow(ctx.store, ownerOf(ctx), id, window, (sql, count) =>
        ctx.audit('webhook.redelivered', { target: id, sql, details: { replay, deliveries: count } }),
      ),
    );
    if (!replayed.ok) {
      if (replayed.status === 404) throw notFound(replayed.error);
      return endpointPage(ctx, id, {}, { error: replayed.error, status: replayed.status });
    }
    return redirect(`/dashboard/webhooks/${id}?done=replayed&count=${replayed.value}`);
  });

  routes.post('/webhook-secret/rotate', { ...MANAGE, recentPassword: true }, async (ctx, request) => {
    const expiresIn = overlapOf(field(request.body, 'expiresIn'));
    const rotated = await tryAction(() =>
      ctx.store.transaction(async (sql) => {
        const result = await rotateSessionSecret(sql, deps.box, ownerOf(ctx), expiresIn);
        await ctx.audit('webhook.secret_rotated', { target: `session secret (${modeName(ctx)})`, details: { expiresIn }, sql });
        return result;
      }),
    );
    if (!rotated.ok) return listPage(ctx, { error: rotated.error, status: rotated.status });
    const shown = await listPage(ctx, {});
    if (shown.kind !== 'page') return shown;
    return page('Webhooks', html`${secretOnce(rotated.value.secret, rotated.value.info.previousSecretExpiresAt)}${shown.body}`);
  });
};
