import { attemptAsShown, getDelivery, getEndpoint, listAttempts, resendEvent } from '../../delivery/index.ts';
import { notFound } from '../../internal/errors.ts';
import { html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';
import { attemptView, deliveryBadge, errorBox, ownerOf, tryAction, when } from './webhookViews.ts';

/**
 * One delivery to an endpoint with every attempt (request as sent but its signatures, response
 * status, timing, the 2 KiB excerpt), and resending it: the API's redeliver to this endpoint.
 */

async function deliveryPage(ctx: DashboardContext, endpointId: string, deliveryId: string, params: { error?: string; status?: number } = {}) {
  const owner = ownerOf(ctx);
  const [endpoint, delivery] = await Promise.all([getEndpoint(ctx.store, owner, endpointId), getDelivery(ctx.store, owner, deliveryId, { endpointId })]);
  if (!endpoint || !delivery) throw notFound(`no delivery ${deliveryId} to webhook endpoint ${endpointId}`);
  const attempts = (await listAttempts(ctx.store, owner, delivery.eventId)).filter((attempt) => attempt.deliveryId === delivery.id);
  // As the API shows attempts to a key: a role that manages webhooks is a write key, a viewer a read-only one.
  const seesRequest = ctx.can('webhooks.manage');
  const base = `/dashboard/webhooks/${endpointId}`;
  return page(
    'Webhook delivery',
    html`${params.error ? errorBox(params.error) : ''}
<p><a href="${base}">Back to the endpoint</a></p>
<dl class="facts">
  <dt>Delivery</dt><dd><code>${delivery.id}</code></dd>
  <dt>Event</dt><dd><code>${delivery.eventId}</code></dd>
  <dt>To</dt><dd><code>${delivery.url}</code></dd>
  <dt>Status</dt><dd>${deliveryBadge(delivery)}</dd>
  <dt>Origin</dt><dd>${delivery.origin}</dd>
  <dt>Attempts</dt><dd>${delivery.attemptCount}</dd>
  <dt>Next attempt</dt><dd>${when(delivery.nextAttemptAt)}</dd>
  <dt>Created</dt><dd>${when(delivery.createdAt)}</dd>
</dl>
${
  seesRequest
    ? html`<form method="post" action="${base}/deliveries/${delivery.id}/resend" class="inline">
  ${ctx.csrfField()}
  <button type="submit">Resend</button>
  <p class="help">Sends the same event (same id and body) again, freshly signed, as a new delivery with the usual retries.</p>
</form>`
    : ''
}
<h2>Attempts</h2>
${attempts.length ? attempts.map((attempt) => attemptView(attemptAsShown(attempt, { seesRequest }))) : html`<p>No attempt yet: it is sent within a second.</p>`}`,
    { status: params.status },
  );
}

export const webhookDeliveryPages: DashboardPageModule = (routes) => {
  routes.get<{ id: string; deliveryId: string }>('/webhooks/:id/deliveries/:deliveryId', { nav: 'webhooks' }, async (ctx, request) =>
    deliveryPage(ctx, request.params.id, request.params.deliveryId),
  );

  routes.post<{ id: string; deliveryId: string }>(
    '/webhooks/:id/deliveries/:deliveryId/resend',
    { nav: 'webhooks', permission: 'webhooks.manage' },
    async (ctx, request) => {
      const { id, deliveryId } = request.params;
      const delivery = await getDelivery(ctx.store, ownerOf(ctx), deliveryId, { endpointId: id });
      if (!delivery) throw notFound(`no delivery ${deliveryId} to webhook endpoint ${id}`);
      const resent = await tryAction(() =>
        resendEvent(ctx.store, ownerOf(ctx), delivery.eventId, { endpointId: id }, (sql, made) =>
          ctx.audit('webhook.redelivered', { target: id, sql, details: { eventId: delivery.eventId, deliveries: made } }),
        ),
      );
      if (!resent.ok) return deliveryPage(ctx, id, deliveryId, { error: resent.error, status: resent.status });
      return redirect(`/dashboard/webhooks/${id}/deliveries/${resent.value[0]}`);
    },
  );
};
