import type { Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import { LEASE_MS, type ClaimedDelivery } from './types.ts';

interface EventRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  type: string;
  payload: unknown;
  created_at: Date;
  session_webhook_url: string | null;
  merchant_secret_sealed: string;
}

interface EndpointRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  url: string;
  enabled_events: string[];
  secret_sealed: string;
}

/** True when an endpoint subscribed to `type` (`*` subscribes to every kind). */
export function endpointWants(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.includes('*') || enabledEvents.includes(type);
}

/**
 * Turns up to `limit` undispatched outbox events into deliveries, exactly once: the events are
 * claimed with `FOR UPDATE SKIP LOCKED` (other workers take other events), each (event, target)
 * is unique among dispatched deliveries, and the events are marked dispatched in the same
 * transaction. Targets are the merchant's enabled endpoints of the event's mode that subscribed
 * to its kind, and the session's webhookUrl. The event body is serialised here, once.
 *
 * Up to `claim` of the new deliveries come back leased to the caller, due now, so it can send
 * them at once; the rest (an event fanning out to many endpoints) stay unleased and due, for
 * any worker to claim, so no lease runs out while a delivery waits in a local queue.
 * Run inside a transaction.
 */
export async function dispatchEvents(sql: Sql, params: { now: Date; limit: number; claim?: number }): Promise<{ events: number; deliveries: ClaimedDelivery[] }> {
  const { rows: events } = await sql.query<EventRow>(
    `SELECT e.id, e.merchant_id, e.livemode, e.type, e.payload, e.created_at, s.webhook_url AS session_webhook_url,
            m.webhook_secret_sealed AS merchant_secret_sealed
       FROM events e
       JOIN merchants m ON m.id = e.merchant_id
       LEFT JOIN payment_sessions s ON s.id = e.session_id
      WHERE e.dispatched_at IS NULL
      ORDER BY e.seq
      LIMIT $1
      FOR UPDATE OF e SKIP LOCKED`,
    [params.limit],
  );
  if (events.length === 0) return { events: 0, deliveries: [] };

  const merchants = [...new Set(events.map((event) => event.merchant_id))];
  const { rows: endpoints } = await sql.query<EndpointRow>(
    `SELECT id, merchant_id, livemode, url, enabled_events, secret_sealed FROM webhook_endpoints
      WHERE merchant_id = ANY($1) AND status = 'enabled' AND deleted_at IS NULL`,
    [merchants],
  );

  const bodies = events.map((event) => JSON.stringify(event.payload));
  const lockedUntil = new Date(params.now.getTime() + LEASE_MS);
  const planned: (ClaimedDelivery & { target: string })[] = [];
  events.forEach((event, index) => {
    const base = {
      eventId: event.id,
      eventType: event.type,
      merchantId: event.merchant_id,
      livemode: event.livemode,
      attemptCount: 0,
      body: bodies[index]!,
      eventCreatedAt: event.created_at,
    };
    for (const endpoint of endpoints) {
      if (endpoint.merchant_id !== event.merchant_id || endpoint.livemode !== event.livemode) continue;
      if (!endpointWants(endpoint.enabled_events, event.type)) continue;
      planned.push({ ...base, id: newId('whd'), endpointId: endpoint.id, url: endpoint.url, secretSealed: endpoint.secret_sealed, target: `endpoint:${endpoint.id}` });
    }
    if (event.session_webhook_url) {
      planned.push({ ...base, id: newId('whd'), endpointId: null, url: event.session_webhook_url, secretSealed: event.merchant_secret_sealed, target: 'session' });
    }
  });

  const leased = planned.slice(0, params.claim ?? planned.length);
  let inserted = new Set<string>();
  if (planned.length > 0) {
    const { rows } = await sql.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, next_attempt_at, locked_until)
       SELECT id, event_id, merchant_id, livemode, endpoint_id, url, 'dispatch', target, $8, CASE WHEN id = ANY($10::text[]) THEN $9::timestamptz END
         FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::text[]) AS t(id, event_id, merchant_id, livemode, endpoint_id, url, target)
       ON CONFLICT (event_id, target) WHERE origin = 'dispatch' DO NOTHING
       RETURNING id`,
      [
        planned.map((d) => d.id),
        planned.map((d) => d.eventId),
        planned.map((d) => d.merchantId),
        planned.map((d) => d.livemode),
        planned.map((d) => d.endpointId),
        planned.map((d) => d.url),
        planned.map((d) => d.target),
        params.now,
        lockedUntil,
        leased.map((d) => d.id),
      ],
    );
    inserted = new Set(rows.map((row) => row.id));
  }
  await sql.query(
    `UPDATE events e SET dispatched_at = $3, body = t.body
       FROM unnest($1::text[], $2::text[]) AS t(id, body)
      WHERE e.id = t.id`,
    [events.map((event) => event.id), bodies, params.now],
  );
  const deliveries = leased.filter((delivery) => inserted.has(delivery.id)).map(({ target: _target, ...delivery }) => delivery);
  return { events: events.length, deliveries };
}
