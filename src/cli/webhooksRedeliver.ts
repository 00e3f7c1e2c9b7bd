import { getMerchant } from '../accounts/index.ts';
import { MAX_REPLAY_EVENTS, redeliverEvent } from '../delivery/replay.ts';
import type { Sql } from '../store/index.ts';
import { jsonOption, parseTime, required, type CliKit, type OperatorCommand } from './operatorKit.ts';

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

interface FailedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string | null;
  target: string;
}

/**
 * Sends again every failed delivery of a merchant made in [since, until): each as a new delivery
 * with its own retries, the same body and event id (receivers dedupe on it), through the same
 * `redeliverEvent` as `POST /events/{id}/redeliver`. A delivery to a registered endpoint goes to
 * that endpoint (skipped, and said so, while the endpoint is disabled or deleted); a delivery to a
 * session's `webhookUrl` is redelivered to the event's original targets, as the API does without
 * an endpoint. A failed delivery that a later one of the same event to the same target replaced
 * (pending or succeeded) is left alone, so running the command twice sends nothing twice.
 */
export async function redeliverFailed(sql: Sql, params: { merchantId: string; livemode: boolean; since: Date; until: Date; dryRun: boolean }): Promise<RedeliverResult | 'too_many'> {
  const owner = { merchantId: params.merchantId, livemode: params.livemode };
  const { rows } = await sql.query<FailedDelivery>(
    `SELECT d.id, d.event_id, d.endpoint_id, d.target FROM webhook_deliveries d
      WHERE d.merchant_id = $1 AND d.livemode = $2 AND d.status = 'failed' AND d.created_at >= $3 AND d.created_at < $4
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries later WHERE later.event_id = d.event_id AND later.target = d.target
                          AND later.created_at > d.created_at AND later.status IN ('pending', 'succeeded'))
      ORDER BY d.created_at, d.id LIMIT $5`,
    [params.merchantId, params.livemode, params.since, params.until, MAX_REPLAY_EVENTS + 1],
  );
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
          outcome === 'endpoint_disabled' ? 'the endpoint is disabled: re-enable it first' : outcome === undefined ? 'the endpoint was deleted' : 'no enabled target left for this event';
        result.skipped.push({ eventId, endpointId, reason });
      }
    }
  }
  return result;
}

/** `svc webhooks redeliver --merchant M --since T [--until T]`. */
export function webhooksRedeliverCommand(kit: CliKit): OperatorCommand {
  return {
    summary: 'send again a merchant’s failed webhook deliveries made in a time window (after a receiver outage)',
    usage: 'svc webhooks redeliver --merchant ID --since TIME [--until TIME] [--mode live|test] [--dry-run] [--json]',
    options: {
      merchant: { type: 'string', description: 'merchant id (mer_…)' },
      since: { type: 'string', description: 'start of the window (ISO 8601, e.g. 2026-11-20T14:00:00Z): deliveries made at or after it' },
      until: { type: 'string', description: 'end of the window, exclusive (default now)' },
      mode: { type: 'string', description: 'live (default) or test: which mode’s deliveries' },
      'dry-run': { type: 'boolean', description: 'list what would be sent, send nothing' },
      ...jsonOption,
    },
    async run({ values, io, json }) {
      const merchantId = required(kit, values, 'merchant');
      const since = parseTime(kit, 'since', required(kit, values, 'since'));
      const until = typeof values.until === 'string' ? parseTime(kit, 'until', values.until) : new Date();
      if (until <= since) throw new kit.UsageError('--until must be later than --since');
      const mode = (values.mode as string | undefined) ?? 'live';
      if (mode !== 'live' && mode !== 'test') throw new kit.UsageError('--mode must be live or test');
      return kit.withStore(io, async (store) => {
        if (!(await getMerchant(store, merchantId))) throw new kit.UsageError(`merchant ${merchantId} does not exist`);
        const result = await store.transaction((sql) => redeliverFailed(sql, { merchantId, livemode: mode === 'live', since, until, dryRun: values['dry-run'] === true }));
        if (result === 'too_many') throw new kit.UsageError(`more than ${MAX_REPLAY_EVENTS} failed deliveries in the window: split it`);
        const sent = result.redelivered.length;
        const lines = [
          `${result.failed} failed deliveries of ${merchantId} (${mode}) from ${since.toISOString()} to ${until.toISOString()}: ${result.dryRun ? `${sent} redeliveries would be made` : `${sent} redelivered`}, ${result.skipped.length} skipped`,
          ...result.redelivered.map((entry) => `  ${result.dryRun ? 'would redeliver' : 'redelivered'} ${entry.eventId} to ${entry.endpointId ?? 'its original targets'}`),
          ...result.skipped.map((entry) => `  skipped ${entry.eventId} (${entry.endpointId ?? 'session URL'}): ${entry.reason}`),
        ];
        kit.emit(io, json, result, lines.join('\n'));
        return 0;
      });
    },
  };
}
