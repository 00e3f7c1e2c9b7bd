import { prepared, type Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import { claimable, leasesInFlight, targetSecretColumns, targetSecretJoins } from './targetSql.ts';
import type { ClaimedDelivery } from './types.ts';

interface EventRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  type: string;
  payload: unknown;
  session_webhook_url: string | null;
  created_at: Date;
}

interface EndpointRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  url: string;
  enabled_events: string[];
}

interface PlannedDelivery {
  id: string;
  eventId: string;
  merchantId: string;
  livemode: boolean;
  endpointId: string | null;
  url: string;
  target: string;
  /** Set when this dispatch leases the delivery to its own worker (see `DispatchLease`). */
  lockedUntil: Date | null;
}

/**
 * Deliveries the dispatching worker sends itself: inserted already leased to it, so a new
 * delivery does not wait for a claim, and is not written twice (the insert, then the claim's
 * lease: neither is a HOT update, each a new entry in every index). At most `max` (the worker's
 * room), and per target no more than `perTarget` leased in all, as the claim counts them. A
 * target that has due deliveries waiting unleased gets none: the claim serves those oldest first,
 * and a new event must not overtake them.
 */
export interface DispatchLease {
  until: Date;
  max: number;
  perTarget: number;
}

interface InsertedRow {
  id: string;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
}

interface TargetRoom {
  target_key: string;
  busy: number;
  waiting: boolean;
}

/** True when an endpoint subscribed to `type` (`*` subscribes to every kind). */
function endpointWants(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.includes('*') || enabledEvents.includes(type);
}

/**
 * Turns up to `limit` undispatched outbox events into deliveries, exactly once: the events are
 * claimed with `FOR UPDATE SKIP LOCKED` (other workers take other events), each (event, target)
 * is unique among dispatched deliveries, and the events are marked dispatched in the same
 * transaction. Targets are the merchant's enabled endpoints of the event's mode that subscribed
 * to its kind, and the session's webhookUrl. The event body is serialised here, once.
 *
 * The deliveries are due at `now`. Without `lease` they are unleased: workers take them with
 * claimDueDeliveries, which applies the per-target cap. With it, some are inserted leased to the
 * caller and returned in `leased`, ready for an attempt once the transaction commits (never
 * before: a rolled-back dispatch has no delivery to send). Run inside a transaction of its own:
 * it commits without waiting for the WAL flush (`synchronous_commit = off`, set by its first
 * statement for the transaction). A dispatch lost in a Postgres crash (the last few hundred
 * milliseconds) leaves its events undispatched, as they were: they are dispatched again and any
 * webhook already sent goes out once more, a duplicate at-least-once delivery allows (receivers
 * deduplicate by event id), never a loss, since the events themselves were committed durably.
 * An attempt's record is a durable commit, so the dispatch before it in the WAL is flushed with
 * it: no attempt outlives its delivery. With the smaller batches of `lease` (the worker's room),
 * each dispatch's flush was a large part of a delivery's cost.
 * @returns how many events were dispatched, how many deliveries they made, and the leased ones.
 */
export async function dispatchEvents(
  sql: Sql,
  params: { now: Date; limit: number; lease?: DispatchLease },
): Promise<{ events: number; deliveries: number; leased: ClaimedDelivery[] }> {
  const { rows: events } = await sql.query<EventRow>(SELECT_EVENTS, [params.limit]);
  if (events.length === 0) return { events: 0, deliveries: 0, leased: [] };

  const merchants = [...new Set(events.map((event) => event.merchant_id))];
  const { rows: endpoints } = await sql.query<EndpointRow>(SELECT_ENDPOINTS, [merchants]);

  const bodies = new Map(events.map((event) => [event.id, JSON.stringify(event.payload)]));
  const planned: PlannedDelivery[] = [];
  for (const event of events) {
    const base = { eventId: event.id, merchantId: event.merchant_id, livemode: event.livemode, lockedUntil: null };
    for (const endpoint of endpoints) {
      if (endpoint.merchant_id !== event.merchant_id || endpoint.livemode !== event.livemode) continue;
      if (!endpointWants(endpoint.enabled_events, event.type)) continue;
      planned.push({ ...base, id: newId('whd'), endpointId: endpoint.id, url: endpoint.url, target: `endpoint:${endpoint.id}` });
    }
    if (event.session_webhook_url) {
      planned.push({ ...base, id: newId('whd'), endpointId: null, url: event.session_webhook_url, target: 'session' });
    }
  }
  if (params.lease && params.lease.max > 0 && planned.length > 0) await leaseSome(sql, planned, params.now, params.lease);

  let inserted: InsertedRow[] = [];
  if (planned.length > 0) {
    ({ rows: inserted } = await sql.query<InsertedRow>(INSERT_DELIVERIES, [
      planned.map((d) => d.id),
      planned.map((d) => d.eventId),
      planned.map((d) => d.merchantId),
      planned.map((d) => d.livemode),
      planned.map((d) => d.endpointId),
      planned.map((d) => d.url),
      planned.map((d) => d.target),
      params.now,
      planned.map((d) => d.lockedUntil),
    ]));
  }
  await sql.query(MARK_DISPATCHED, [[...bodies.keys()], [...bodies.values()], params.now]);
  // In event order (the statement's joins may return its rows in any order): the worker starts
  // them in this order, so a receiver mostly gets a session's events in the order they happened.
  // Leased: planned so (leaseSome) and inserted (not already dispatched by another worker).
  const insertedRows = new Map(inserted.map((row) => [row.id, row]));
  const eventsById = new Map(events.map((event) => [event.id, event]));
  const leased = planned
    .filter((delivery) => delivery.lockedUntil !== null && insertedRows.has(delivery.id))
    .map((delivery): ClaimedDelivery => {
      const row = insertedRows.get(delivery.id)!;
      const event = eventsById.get(delivery.eventId)!;
      return {
        id: delivery.id,
        eventId: event.id,
        eventType: event.type,
        merchantId: delivery.merchantId,
        livemode: delivery.livemode,
        endpointId: delivery.endpointId,
        url: delivery.url,
        attemptCount: 0,
        body: bodies.get(event.id)!,
        secretSealed: row.secret_sealed,
        previousSecretSealed: row.previous_secret_sealed,
        eventCreatedAt: event.created_at,
      };
    });
  return { events: events.length, deliveries: inserted.length, leased };
}

/**
 * Marks the planned deliveries this dispatch leases (DispatchLease), in event order: per target,
 * the room its leases in all workers leave under the cap, none where due deliveries wait
 * unleased. One statement over the batch's targets, through migration 020's indexes.
 */
async function leaseSome(sql: Sql, planned: PlannedDelivery[], now: Date, lease: DispatchLease): Promise<void> {
  const keyOf = (delivery: PlannedDelivery) => delivery.endpointId ?? delivery.url;
  const { rows } = await sql.query<TargetRoom>(TARGET_ROOM, [[...new Set(planned.map(keyOf))], now]);
  const room = new Map(rows.map((row) => [row.target_key, row.waiting ? 0 : Math.max(0, lease.perTarget - row.busy)]));
  let left = lease.max;
  for (const delivery of planned) {
    if (left === 0) break;
    const key = keyOf(delivery);
    const free = room.get(key) ?? 0;
    if (free === 0) continue;
    room.set(key, free - 1);
    delivery.lockedUntil = lease.until;
    left -= 1;
  }
}

// Prepared (planned once per connection; src/store/prepared.ts): a dispatch runs for every few
// deliveries, and parsing and planning its statements anew was a large part of its cost. The
// statements after the first run on their generic plans (`plan_cache_mode`, for this transaction
// only): with an array parameter, a custom plan is priced for the array's few elements and a
// generic one for ten, so Postgres planned TARGET_ROOM again at every call (pg_stat_statements'
// plans, `bench/webhooks.ts --statements`), though both plans are one index probe per element.
const SELECT_EVENTS = prepared(
  `SELECT e.id, e.merchant_id, e.livemode, e.type, e.payload, e.created_at, s.webhook_url AS session_webhook_url
       FROM events e
       -- The transaction commits without waiting for the WAL flush (see the doc comment), and
       -- its later statements take their generic plans (above).
       CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)) AS dispatch_settings
       LEFT JOIN payment_sessions s ON s.id = e.session_id
      WHERE e.dispatched_at IS NULL
      ORDER BY e.seq
      LIMIT $1
      FOR UPDATE OF e SKIP LOCKED`,
);

const SELECT_ENDPOINTS = prepared(
  `SELECT id, merchant_id, livemode, url, enabled_events FROM webhook_endpoints
      WHERE merchant_id = ANY($1) AND status = 'enabled' AND deleted_at IS NULL`,
);

const INSERT_DELIVERIES = prepared(
  `WITH inserted AS (
         INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, next_attempt_at, locked_until)
         SELECT id, event_id, merchant_id, livemode, endpoint_id, url, 'dispatch', target, $8, locked_until
           FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::text[], $9::timestamptz[])
                AS t(id, event_id, merchant_id, livemode, endpoint_id, url, target, locked_until)
         ON CONFLICT (event_id, target) WHERE origin = 'dispatch' DO NOTHING
         RETURNING id, merchant_id, livemode, endpoint_id
       )
       SELECT d.id, ${targetSecretColumns('d', '$8')}
         FROM inserted d ${targetSecretJoins('d')}`,
);

const MARK_DISPATCHED = prepared(
  `UPDATE events e SET dispatched_at = $3, body = t.body
       FROM unnest($1::text[], $2::text[]) AS t(id, body)
      WHERE e.id = t.id`,
);

const TARGET_ROOM = prepared(
  `SELECT k.target_key, (${leasesInFlight('k.target_key', '$2')})::int AS busy,
            EXISTS (SELECT 1 FROM webhook_deliveries c WHERE ${claimable('c', 'k.target_key', '$2')}) AS waiting
       FROM unnest($1::text[]) AS k(target_key)`,
);
