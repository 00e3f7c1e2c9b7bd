import type { Config } from '../internal/config.ts';
import { allowPrivateWebhooks } from '../internal/config.ts';
import type { SecretBox } from '../internal/crypto.ts';
import { newId } from '../internal/crypto.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';
import { appendEvent, EVENT_TYPES } from '../payments/outbox.ts';
import type { Sql, Store } from '../store/index.ts';
import { createEndpoint, failPendingDeliveries, getEndpoint, rotateEndpointSecret, updateEndpoint, type Owner, type WebhookEndpoint } from './endpoints.ts';
import { ENDPOINT_DISABLED_EVENT } from './record.ts';
import { MAX_REPLAY_EVENTS, redeliverEvent, replayEndpoint } from './replay.ts';
import { MAX_ROTATION_OVERLAP_SECONDS, rotateMerchantSecret } from './secrets.ts';
import { checkWebhookUrl, UnsafeWebhookUrlError } from './ssrf.ts';

/**
 * The rules of managing webhook endpoints, written once for the API (src/api/routes/webhooks.ts,
 * events.ts) and the dashboard (src/dashboard/pages/webhooks.ts): which URLs are allowed, which
 * event kinds, what a refused redelivery or replay says. Refusals are the errors of
 * src/internal/errors.ts, so both answer the same status and the same `error` text.
 */

/** Event kinds an endpoint may subscribe to: spec §6.1, the endpoint-disabled notice, and `*`. */
export const SUBSCRIBABLE_EVENTS = ['*', ...EVENT_TYPES, ENDPOINT_DISABLED_EVENT] as const;

/** The kind of the event {@link sendTestEvent} makes: sent to one endpoint whatever it subscribes to. */
export const TEST_EVENT = 'webhook_endpoint.test';

/** The config the URL rule needs: which private addresses each mode may reach. */
export type UrlPolicy = Pick<Config, 'webhookAllowPrivate' | 'webhookAllowPrivateSandbox'>;

/**
 * The URL when it is well formed and (per the mode's policy, SVC_WEBHOOK_ALLOW_PRIVATE) not
 * internal; a 400 naming `field` (the request's field: `url` for endpoints, `webhookUrl` on
 * sessions and payment links) otherwise.
 */
export async function checkUrlForMode(url: string, config: UrlPolicy, livemode: boolean, field = 'url'): Promise<string> {
  try {
    await checkWebhookUrl(url, { allowPrivate: allowPrivateWebhooks(config, livemode) });
    return url;
  } catch (error) {
    if (error instanceof UnsafeWebhookUrlError) throw badRequest(`${field}: ${error.shortMessage}`);
    throw error;
  }
}

/** The subscribed kinds as stored: `*` alone stands for everything; an unknown kind is a 400. */
export function normaliseEvents(events: readonly string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  if (events.length === 0) throw badRequest('enabledEvents: choose at least one event kind (or * for every kind)');
  const unknown = events.filter((event) => !(SUBSCRIBABLE_EVENTS as readonly string[]).includes(event));
  if (unknown.length > 0) throw badRequest(`enabledEvents: ${unknown.map((event) => JSON.stringify(event)).join(', ')} is not an event kind`);
  return events.includes('*') ? ['*'] : [...new Set(events)];
}

/**
 * Registers an endpoint after checking its URL for the owner's mode; the secret is returned here
 * once. `inTransaction` runs in the creating transaction (the API saves its idempotent answer).
 * @throws 400 for an unsafe URL or unknown event kind, 409 beyond MAX_ENDPOINTS_PER_MODE.
 */
export async function registerEndpoint(
  store: Store,
  box: SecretBox,
  config: UrlPolicy,
  owner: Owner,
  input: { url: string; description?: string | null; enabledEvents?: readonly string[] },
  inTransaction?: (sql: Sql, endpoint: WebhookEndpoint) => Promise<void>,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  // The kinds first: checking them needs no DNS lookup.
  const enabledEvents = normaliseEvents(input.enabledEvents);
  const url = await checkUrlForMode(input.url, config, owner.livemode);
  return store.transaction(async (sql) => {
    const created = await createEndpoint(sql, box, { ...owner, url, description: input.description ?? null, enabledEvents });
    await inTransaction?.(sql, created.endpoint);
    return created;
  });
}

/**
 * Changes an endpoint (URL checked like a new one). Disabling ends its pending deliveries.
 * `inTransaction` runs in the changing transaction (the audit entry).
 * @throws 404 when it is not the owner's, 400 for a bad URL or event kind.
 */
export async function changeEndpoint(
  store: Store,
  config: UrlPolicy,
  owner: Owner,
  id: string,
  changes: { url?: string; description?: string | null; enabledEvents?: readonly string[]; status?: 'enabled' | 'disabled' },
  inTransaction?: (sql: Sql, endpoint: WebhookEndpoint) => Promise<void>,
): Promise<WebhookEndpoint> {
  const enabledEvents = normaliseEvents(changes.enabledEvents);
  const url = changes.url === undefined ? undefined : await checkUrlForMode(changes.url, config, owner.livemode);
  const endpoint = await store.transaction(async (sql) => {
    const updated = await updateEndpoint(sql, owner, id, {
      url,
      enabledEvents,
      status: changes.status,
      ...('description' in changes ? { description: changes.description ?? null } : {}),
    });
    if (updated && changes.status === 'disabled') await failPendingDeliveries(sql, updated.id, 'endpoint disabled by the merchant');
    if (updated) await inTransaction?.(sql, updated);
    return updated;
  });
  if (!endpoint) throw notFound(`no webhook endpoint ${id}`);
  return endpoint;
}

/**
 * Replaces an endpoint's secret, the old one signing beside it for `expiresInSeconds`
 * (0..MAX_ROTATION_OVERLAP_SECONDS). Run in a transaction.
 * @throws 404 when it is not the owner's, 400 for an overlap out of range.
 */
export async function rotateSigningSecret(sql: Sql, box: SecretBox, owner: Owner, id: string, expiresInSeconds: number) {
  checkOverlap(expiresInSeconds);
  const rotated = await rotateEndpointSecret(sql, box, owner, id, { expiresInSeconds });
  if (!rotated) throw notFound(`no webhook endpoint ${id}`);
  return rotated;
}

function checkOverlap(expiresInSeconds: number): void {
  if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 0 || expiresInSeconds > MAX_ROTATION_OVERLAP_SECONDS)
    throw badRequest(`expiresIn must be a whole number of seconds from 0 to ${MAX_ROTATION_OVERLAP_SECONDS}`);
}

/**
 * Replaces the owner's secret of per-session webhookUrl deliveries (rotateMerchantSecret), the
 * old one signing beside it for `expiresInSeconds`. Run in a transaction.
 * @throws 400 for an overlap out of range.
 */
export function rotateSessionSecret(sql: Sql, box: SecretBox, owner: Owner, expiresInSeconds: number) {
  checkOverlap(expiresInSeconds);
  return rotateMerchantSecret(sql, box, owner, { expiresInSeconds });
}

/** Until when an endpoint's replaced secret still signs beside the current one; null when one secret signs. */
export async function previousSecretSignsUntil(sql: Sql, owner: Owner, id: string): Promise<Date | null> {
  const { rows } = await sql.query<{ until: Date | null }>(
    `SELECT CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS until
       FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL`,
    [id, owner.merchantId, owner.livemode],
  );
  return rows[0]?.until ?? null;
}

const DISABLED_ENDPOINT = 'the endpoint is disabled: enable it first (PATCH status "enabled")';

/**
 * Sends an event again as a new delivery (redeliverEvent), to `endpointId` or to every original
 * target. @returns the new delivery ids.
 * @throws 404 for an event or endpoint not the owner's, 409 when it cannot be sent now.
 */
export async function resendEvent(
  store: Store,
  owner: Owner,
  eventId: string,
  params: { endpointId?: string } = {},
  inTransaction?: (sql: Sql, deliveryIds: string[]) => Promise<void>,
): Promise<string[]> {
  const result = await store.transaction(async (sql) => {
    const made = await redeliverEvent(sql, owner, eventId, params);
    // Only a redelivery that happens is recorded; the refusals below roll nothing back, as nothing was made.
    if (Array.isArray(made) && made.length > 0) await inTransaction?.(sql, made);
    return made;
  });
  if (result === undefined) throw notFound(params.endpointId ? `no event ${eventId} or no webhook endpoint ${params.endpointId}` : `no event ${eventId}`);
  if (result === 'not_dispatched') throw conflict('the event has not been dispatched yet; it will be within a second');
  if (result === 'endpoint_disabled') throw conflict(DISABLED_ENDPOINT);
  if (result.length === 0) throw conflict('the event has no enabled target to redeliver to: pass endpointId');
  return result;
}

/**
 * Resends every event of [from, to) the endpoint subscribes to (replayEndpoint), at most
 * MAX_REPLAY_EVENTS. @returns how many deliveries were made.
 * @throws 400 for an empty or too wide window, 404, 409 for a disabled endpoint.
 */
export async function replayWindow(
  store: Store,
  owner: Owner,
  endpointId: string,
  window: { from: Date; to: Date },
  inTransaction?: (sql: Sql, count: number) => Promise<void>,
): Promise<number> {
  if (Number.isNaN(window.from.getTime()) || Number.isNaN(window.to.getTime())) throw badRequest('from and to must be dates and times');
  if (!(window.from < window.to)) throw badRequest('from must be earlier than to');
  const result = await store.transaction(async (sql) => {
    const replayed = await replayEndpoint(sql, owner, endpointId, window);
    if (typeof replayed === 'object') await inTransaction?.(sql, replayed.count);
    return replayed;
  });
  if (result === undefined) throw notFound(`no webhook endpoint ${endpointId}`);
  if (result === 'endpoint_disabled') throw conflict(DISABLED_ENDPOINT);
  if (result === 'too_many') throw badRequest(`the window holds more than ${MAX_REPLAY_EVENTS} events: replay a narrower window`);
  return result.count;
}

/**
 * Sends a `webhook_endpoint.test` event to one enabled endpoint of the owner, whatever kinds it
 * subscribes to, and to nothing else: the event is stored already dispatched (so the dispatcher
 * never fans it out) with its one delivery, signed and retried like any other. Receivers see a
 * real, verifiable delivery whose `data.test` is true, in the endpoint's own mode.
 * @returns the event and delivery ids.
 * @throws 404 when the endpoint is not the owner's, 409 when it is disabled.
 */
export async function sendTestEvent(store: Store, owner: Owner, endpointId: string): Promise<{ eventId: string; deliveryId: string }> {
  return store.transaction(async (sql) => {
    const endpoint = await getEndpoint(sql, owner, endpointId);
    if (!endpoint) throw notFound(`no webhook endpoint ${endpointId}`);
    if (endpoint.status !== 'enabled') throw conflict(DISABLED_ENDPOINT);
    const event = await appendEvent(sql, {
      merchantId: owner.merchantId,
      livemode: owner.livemode,
      type: TEST_EVENT,
      data: { test: true, endpointId, message: 'A test event: your endpoint received and can verify a signed delivery.' },
    });
    // Dispatched already, with the body the delivery sends: the dispatcher never fans it out.
    await sql.query('UPDATE events SET dispatched_at = now(), body = $2 WHERE id = $1', [event.id, JSON.stringify(event)]);
    const deliveryId = newId('whd');
    await sql.query(
      `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, next_attempt_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'dispatch', $7, now())`,
      [deliveryId, event.id, owner.merchantId, owner.livemode, endpointId, endpoint.url, `endpoint:${endpointId}`],
    );
    return { eventId: event.id, deliveryId };
  });
}
