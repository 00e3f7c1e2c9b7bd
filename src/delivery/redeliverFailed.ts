import type { Sql } from '../store/index.ts';
import type { Owner } from './endpoints.ts';
import { MAX_REPLAY_EVENTS, redeliverEvent } from './replay.ts';

/** What `svc webhooks redeliver` did, or would do with --dry-run. */
export interface RedeliverResult {
  merchantId: string;
  livemode: boolean;
  since: Date;
  until: Date;
  dryRun: boolean;
  /** Failed deliveries in the window that no later delivery of the same event to the same target has replaced. */
  failed: number;
  redelivered: { eventId: string; endpointId: string | null; deliveryIds: string[] }[];
  skipped: { eventId: string; endpointId: string | null; reason: string }[];
}

/** A failed delivery that nothing has replaced yet. */
interface FailedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string | null;
  target: string;
}

/**
 * The owner's failed deliveries made in [since, until), oldest first, leaving out each one that a
 * later delivery of the same event to the same target replaced (pending or succeeded); at most
 * `limit` of them.
 */
async function unreplacedFailedDeliveries(sql: Sql, owner: Owner, window: { since: Date; until: Date }, limit: number): Promise<FailedDelivery[]> {
  const { rows } = await sql.query<FailedDelivery>(
    `SELECT d.id, d.event_id, d.endpoint_id, d.target FROM webhook_deliveries d
      WHERE d.merchant_id = $1 AND d.livemode = $2 AND d.status = 'failed' AND d.created_at >= $3 AND d.created_at < $4
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries later WHERE later.event_id = d.event_id AND later.target = d.target
                          AND later.created_at > d.created_at AND later.status IN ('pending', 'succeeded'))
      ORDER BY d.created_at, d.id LIMIT $5`,
    [owner.merchantId, owner.livemode, window.since, window.until, limit],
  );
  return rows;
}

/**
 * Sends again every failed delivery of a merchant made in [since, until): each as a new delivery
 * with its own retries, the same body and event id (receivers dedupe on it), through the same
 * `redeliverEvent` as `POST /events/{id}/redeliver`. A delivery to a registered endpoint goes to
 * that endpoint (skipped, and said so, while the endpoint is disabled or deleted); a delivery to a
 * session's `webhookUrl` is redelivered to the event's original targets, as the API does without
 * an endpoint. A failed delivery that a later one of the same event to the same target replaced
 * (pending or succeeded) is left alone, so running the command twice sends nothing twice.
 * @returns `'too_many'` when the window holds more than MAX_REPLAY_EVENTS of them (split it).
 */
export async function redeliverFailed(
  sql: Sql,
  params: { merchantId: string; livemode: boolean; since: Date; until: Date; dryRun: boolean },
): Promise<RedeliverResult | 'too_many'> {
  const owner = { merchantId: params.merchantId, livemode: params.livemode };
  const rows = await unreplacedFailedDeliveries(sql, owner, params, MAX_REPLAY_EVENTS + 1);
  if (rows.length > MAX_REPLAY_EVENTS) return 'too_many';
  const result: RedeliverResult = { ...params, failed: rows.length, redelivered: [], skipped: [] };
  // Per event: its failed endpoint targets one by one, or, when a session URL failed, all original targets at once.
  const byEvent = new Map<string, FailedDelivery[]>();
  for (const row of rows) byEvent.set(row.event_id, [...(byEvent.get(row.event_id) ?? []), row]);
  for (const [eventId, failed] of byEvent) {
    const targets = failed.some((row) => row.endpoint_id === null) ? [null] : [...new Set(failed.map((row) => row.endpoint_id))];
    for (const endpointId of targets) {
      if (params.dryRun) {
        result.redelivered.push({ eventId, endpointId, deliveryIds: [] });
        continue;
      }
      const outcome = await redeliverEvent(sql, owner, eventId, endpointId ? { endpointId } : {});
      if (Array.isArray(outcome) && outcome.length > 0) result.redelivered.push({ eventId, endpointId, deliveryIds: outcome });
      else {
        const reason =
          outcome === 'endpoint_disabled'
            ? 'the endpoint is disabled: re-enable it first'
            : outcome === undefined
              ? 'the endpoint was deleted'
              : 'no enabled target left for this event';
        result.skipped.push({ eventId, endpointId, reason });
      }
    }
  }
  return result;
}
