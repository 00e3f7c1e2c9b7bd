import type { Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import type { Owner } from './endpoints.ts';

/**
 * Most events one replay request may resend; a wider window is refused so it can be split.
 * Each is a delivery with up to 10 attempts: at 30 writes a minute per key, this bounds what one
 * key can queue in a minute to 30,000 deliveries (it was 300,000 at 10,000 per request).
 */
export const MAX_REPLAY_EVENTS = 1_000;

interface Target {
  endpoint_id: string | null;
  url: string;
  target: string;
}

async function insertDeliveries(sql: Sql, owner: Owner, origin: 'redeliver' | 'replay', rows: { eventId: string; target: Target }[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const ids = rows.map(() => newId('whd'));
  await sql.query(
    `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, next_attempt_at)
     SELECT id, event_id, $6, $7, endpoint_id, url, $8, target, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t(id, event_id, endpoint_id, url, target)`,
    [
      ids,
      rows.map((r) => r.eventId),
      rows.map((r) => r.target.endpoint_id),
      rows.map((r) => r.target.url),
      rows.map((r) => r.target.target),
      owner.merchantId,
      owner.livemode,
      origin,
    ],
  );
  return ids;
}

/**
 * Sends an event again, as a new delivery with its own attempts and retries, and the same body
 * and event id as before. With `endpointId`, to that endpoint (enabled, the owner's); without,
 * to every target its first dispatch reached that is still enabled (session URLs included).
 * @returns the new delivery ids; `undefined` when the event (or endpoint) is not the owner's,
 * `'not_dispatched'` when the event has not been dispatched yet (it will be, shortly).
 */
export async function redeliverEvent(
  sql: Sql,
  owner: Owner,
  eventId: string,
  params: { endpointId?: string } = {},
): Promise<string[] | undefined | 'not_dispatched' | 'endpoint_disabled'> {
  const { rows: events } = await sql.query<{ dispatched_at: Date | null }>(
    'SELECT dispatched_at FROM events WHERE id = $1 AND merchant_id = $2 AND livemode = $3',
    [eventId, owner.merchantId, owner.livemode],
  );
  if (!events[0]) return undefined;
  if (!events[0].dispatched_at) return 'not_dispatched';
  let targets: Target[];
  if (params.endpointId) {
    const { rows } = await sql.query<Target & { status: string }>(
      `SELECT id AS endpoint_id, url, 'endpoint:' || id AS target, status FROM webhook_endpoints
        WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL`,
      [params.endpointId, owner.merchantId, owner.livemode],
    );
    if (!rows[0]) return undefined;
    if (rows[0].status !== 'enabled') return 'endpoint_disabled';
    targets = rows;
  } else {
    const { rows } = await sql.query<Target>(
      `SELECT d.endpoint_id, coalesce(w.url, d.url) AS url, d.target
         FROM webhook_deliveries d LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
        WHERE d.event_id = $1 AND d.origin = 'dispatch'
          AND (d.endpoint_id IS NULL OR (w.status = 'enabled' AND w.deleted_at IS NULL))
        ORDER BY d.created_at`,
      [eventId],
    );
    targets = rows;
  }
  return insertDeliveries(
    sql,
    owner,
    'redeliver',
    targets.map((target) => ({ eventId, target })),
  );
}

/**
 * Resends to one endpoint every dispatched event of its owner created in [from, to) that the
 * endpoint subscribes to, oldest first, each as a new delivery (with the usual retries).
 * Receivers dedupe on the event id, so replaying what already arrived is harmless.
 * @returns the number of deliveries made; `undefined` when the endpoint is not the owner's.
 */
export async function replayEndpoint(
  sql: Sql,
  owner: Owner,
  endpointId: string,
  window: { from: Date; to: Date },
): Promise<{ count: number } | undefined | 'endpoint_disabled' | 'too_many'> {
  const { rows: endpoints } = await sql.query<{ url: string; enabled_events: string[]; status: string }>(
    'SELECT url, enabled_events, status FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL',
    [endpointId, owner.merchantId, owner.livemode],
  );
  const endpoint = endpoints[0];
  if (!endpoint) return undefined;
  if (endpoint.status !== 'enabled') return 'endpoint_disabled';
  const { rows: events } = await sql.query<{ id: string }>(
    `SELECT id FROM events
      WHERE merchant_id = $1 AND livemode = $2 AND created_at >= $3 AND created_at < $4 AND dispatched_at IS NOT NULL
        AND ('*' = ANY($5::text[]) OR type = ANY($5::text[]))
      ORDER BY seq LIMIT $6`,
    [owner.merchantId, owner.livemode, window.from, window.to, endpoint.enabled_events, MAX_REPLAY_EVENTS + 1],
  );
  if (events.length > MAX_REPLAY_EVENTS) return 'too_many';
  const target: Target = { endpoint_id: endpointId, url: endpoint.url, target: `endpoint:${endpointId}` };
  const ids = await insertDeliveries(
    sql,
    owner,
    'replay',
    events.map((event) => ({ eventId: event.id, target })),
  );
  return { count: ids.length };
}
