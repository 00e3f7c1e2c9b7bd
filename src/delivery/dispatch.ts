import type { Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';

interface EventRow {
  id: string;
  merchant_id: string;
  livemode: boolean;
  type: string;
  payload: unknown;
  session_webhook_url: string | null;
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
 * The deliveries are due at `now` and unleased: workers take them with claimDueDeliveries, which
 * applies the per-target cap. Run inside a transaction.
 * @returns how many events were dispatched and how many deliveries they made.
 */
export async function dispatchEvents(sql: Sql, params: { now: Date; limit: number }): Promise<{ events: number; deliveries: number }> {
  const { rows: events } = await sql.query<EventRow>(
    `SELECT e.id, e.merchant_id, e.livemode, e.type, e.payload, s.webhook_url AS session_webhook_url
       FROM events e
       LEFT JOIN payment_sessions s ON s.id = e.session_id
      WHERE e.dispatched_at IS NULL
      ORDER BY e.seq
      LIMIT $1
      FOR UPDATE OF e SKIP LOCKED`,
    [params.limit],
  );
  if (events.length === 0) return { events: 0, deliveries: 0 };

  const merchants = [...new Set(events.map((event) => event.merchant_id))];
  const { rows: endpoints } = await sql.query<EndpointRow>(
    `SELECT id, merchant_id, livemode, url, enabled_events FROM webhook_endpoints
      WHERE merchant_id = ANY($1) AND status = 'enabled' AND deleted_at IS NULL`,
    [merchants],
  );

  const bodies = events.map((event) => JSON.stringify(event.payload));
  const planned: PlannedDelivery[] = [];
  for (const event of events) {
    const base = { eventId: event.id, merchantId: event.merchant_id, livemode: event.livemode };
    for (const endpoint of endpoints) {
      if (endpoint.merchant_id !== event.merchant_id || endpoint.livemode !== event.livemode) continue;
      if (!endpointWants(endpoint.enabled_events, event.type)) continue;
      planned.push({ ...base, id: newId('whd'), endpointId: endpoint.id, url: endpoint.url, target: `endpoint:${endpoint.id}` });
    }
    if (event.session_webhook_url) {
      planned.push({ ...base, id: newId('whd'), endpointId: null, url: event.session_webhook_url, target: 'session' });
    }
  }

  let inserted = 0;
  if (planned.length > 0) {
    const { rowCount } = await sql.query(
      `INSERT INTO webhook_deliveries (id, event_id, merchant_id, livemode, endpoint_id, url, origin, target, next_attempt_at)
       SELECT id, event_id, merchant_id, livemode, endpoint_id, url, 'dispatch', target, $8
         FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::text[]) AS t(id, event_id, merchant_id, livemode, endpoint_id, url, target)
       ON CONFLICT (event_id, target) WHERE origin = 'dispatch' DO NOTHING`,
      [
        planned.map((d) => d.id),
        planned.map((d) => d.eventId),
        planned.map((d) => d.merchantId),
        planned.map((d) => d.livemode),
        planned.map((d) => d.endpointId),
        planned.map((d) => d.url),
        planned.map((d) => d.target),
        params.now,
      ],
    );
    inserted = rowCount ?? 0;
  }
  await sql.query(
    `UPDATE events e SET dispatched_at = $3, body = t.body
       FROM unnest($1::text[], $2::text[]) AS t(id, body)
      WHERE e.id = t.id`,
    [events.map((event) => event.id), bodies, params.now],
  );
  return { events: events.length, deliveries: inserted };
}
