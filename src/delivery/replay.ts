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
 * Resends to one endpoint every event of its owner created in [from, to) that it subscribes to
 * and **missed**, oldest first, each as a new delivery (with the usual retries). Missed: no
 * delivery of the event to this endpoint succeeded or is still under way (pending), whatever
 * its origin; so events that failed while the endpoint was down, that it was disabled for (no
 * delivery at all, or one its disabling ended), or that came before it was registered. An event
 * the endpoint already got is not sent again (POST /events/{id}/redeliver does that, one event
 * at a time), and replaying the same window twice, or two overlapping windows at once, queues
 * each missed event once (the receiver-outage run's finding: a replay after re-enabling resent
 * the window's events the endpoint had received before its outage). Run in a transaction.
 *
 * Only dispatched events are replayed (an undispatched one is dispatched to the enabled
 * endpoint as usual). An event a dispatcher is dispatching at this moment is waited for: the
 * dispatcher may have read the endpoint while it was still disabled and give it no delivery.
 * @returns the number of deliveries made; `undefined` when the endpoint is not the owner's.
 */
export async function replayEndpoint(
  sql: Sql,
  owner: Owner,
  endpointId: string,
  window: { from: Date; to: Date },
): Promise<{ count: number } | undefined | 'endpoint_disabled' | 'too_many'> {
  // The endpoint's row lock queues concurrent replays (and status changes) of this endpoint: the
  // second one sees the first one's deliveries and makes none for the same events.
  const { rows: endpoints } = await sql.query<{ url: string; enabled_events: string[]; status: string }>(
    `SELECT url, enabled_events, status FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2 AND livemode = $3 AND deleted_at IS NULL
        FOR NO KEY UPDATE`,
    [endpointId, owner.merchantId, owner.livemode],
  );
  const endpoint = endpoints[0];
  if (!endpoint) return undefined;
  if (endpoint.status !== 'enabled') return 'endpoint_disabled';
  const subscribed = `e.merchant_id = $1 AND e.livemode = $2 AND e.created_at >= $3 AND e.created_at < $4 AND ('*' = ANY($5::text[]) OR e.type = ANY($5::text[]))`;
  const params = [owner.merchantId, owner.livemode, window.from, window.to, endpoint.enabled_events];
  // Undispatched events of the window (few: the outbox drains in milliseconds): a dispatcher
  // holds the ones it is dispatching (FOR UPDATE), so this waits for its commit, and it skips
  // the others (SKIP LOCKED) until this transaction ends, when the endpoint is enabled for it.
  await sql.query(`SELECT e.id FROM events e WHERE ${subscribed} AND e.dispatched_at IS NULL FOR SHARE`, params);
  // A new statement, so a new snapshot: it sees what those dispatchers committed.
  const { rows: events } = await sql.query<{ id: string }>(
    `SELECT e.id FROM events e
      WHERE ${subscribed} AND e.dispatched_at IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                         WHERE d.event_id = e.id AND d.endpoint_id = $6 AND d.status IN ('pending', 'succeeded'))
      ORDER BY e.seq LIMIT $7`,
    [...params, endpointId, MAX_REPLAY_EVENTS + 1],
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
