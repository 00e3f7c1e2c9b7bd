/**
 * The audit of the receiver-outage run (receiverOutageRun.ts): reads every event, delivery and
 * attempt of the merchant back from Postgres and every delivery the receivers accepted, and
 * checks them against the documented schedule and disabling policy (docs/webhooks.md
 * "Delivery, retries, disabling"). Times are simulated: attempts carry the injected clock's.
 */
import { DISABLE_AFTER_FAILING_MS, RETRY_DELAYS_MS } from '../../../src/delivery/index.ts';
import type { Store } from '../../../src/store/index.ts';
import type { OutageEvent } from './outageEvents.ts';
import type { OutageReceiver } from './outageReceivers.ts';
import { TIMELINE } from './receiverOutageRun.ts';

const HOUR = 3_600_000;
/** Lateness allowed on a scheduled attempt: the run's steps are at least a second apart. */
const SLACK_MS = 2_000;

export interface OutageReport {
  defects: string[];
  events: number;
  deliveries: number;
  attempts: number;
  steps: number;
  durationMs: number;
  /** Events that were waiting for A when it came back, and how long after it they arrived (simulated hours). */
  a: { backlogAtReturn: number; maxHoursAfterReturn: number; meanHoursAfterReturn: number; maxAttempts: number; duplicates: number };
  /** When B was disabled, days after its first failed attempt, and what its replay resent. */
  b: { disabledAfterDays: number | null; reason: string | null; replayed: number; received: number; duplicates: number };
  c: { reason: string | null; attempts: number };
}

interface AttemptRow {
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  attempt_number: number;
  started_at: Date;
  succeeded: boolean;
}

export async function auditOutage(params: {
  store: Store;
  merchantId: string;
  start: number;
  events: OutageEvent[];
  endpoints: { a: string; b: string; c: string };
  receivers: { a: OutageReceiver; b: OutageReceiver; c: OutageReceiver };
  bReenabledAt: Date;
  steps: number;
  durationMs: number;
}): Promise<OutageReport> {
  const { store, merchantId, start, endpoints, receivers } = params;
  const defects: string[] = [];
  const sim = (date: Date) => date.getTime() - start;
  const events = (
    await store.query<{ id: string; type: string; data: any }>("SELECT id, type, payload->'data' AS data FROM events WHERE merchant_id = $1", [merchantId])
  ).rows;
  const deliveries = (
    await store.query<{ id: string; event_id: string; endpoint_id: string; status: string; last_error: string | null; reason: string }>(
      'SELECT d.id, d.event_id, d.endpoint_id, d.status, d.last_error, d.origin AS reason FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.merchant_id = $1',
      [merchantId],
    )
  ).rows;
  const attempts = (
    await store.query<AttemptRow>(
      `SELECT a.delivery_id, a.endpoint_id, a.event_id, a.attempt_number, a.started_at, a.succeeded FROM webhook_attempts a
         JOIN events e ON e.id = a.event_id WHERE e.merchant_id = $1 ORDER BY a.delivery_id, a.attempt_number`,
      [merchantId],
    )
  ).rows;
  const endpointRows = new Map(
    (await store.query<{ id: string; status: string }>('SELECT id, status FROM webhook_endpoints WHERE merchant_id = $1', [merchantId])).rows.map((row) => [
      row.id,
      row,
    ]),
  );
  const eventIds = new Set(events.map((event) => event.id));
  const byDelivery = new Map<string, AttemptRow[]>();
  for (const attempt of attempts) byDelivery.set(attempt.delivery_id, [...(byDelivery.get(attempt.delivery_id) ?? []), attempt]);

  // Nothing delivered twice under different ids, nothing made up.
  const idsOfSeq = new Map<number, Set<string>>();
  for (const receiver of Object.values(receivers)) {
    for (const got of receiver.accepted) {
      if (!eventIds.has(got.eventId)) defects.push(`a receiver got ${got.eventId}, no event of the merchant (phantom)`);
      if (got.seq >= 0) idsOfSeq.set(got.seq, new Set([...(idsOfSeq.get(got.seq) ?? []), got.eventId]));
    }
  }
  for (const [seq, ids] of idsOfSeq) if (ids.size > 1) defects.push(`event seq ${seq} delivered under ${ids.size} ids: ${[...ids].join(', ')}`);
  for (const delivery of deliveries) if (delivery.status === 'pending') defects.push(`delivery ${delivery.id} still pending at the end`);

  // Every attempt after the first waited the documented delay (±10 % jitter).
  for (const [deliveryId, list] of byDelivery) {
    for (let i = 1; i < list.length; i++) {
      const gap = list[i]!.started_at.getTime() - list[i - 1]!.started_at.getTime();
      const delay = RETRY_DELAYS_MS[list[i - 1]!.attempt_number - 1]!;
      if (gap < delay * 0.9 - 1 || gap > delay * 1.1 + SLACK_MS)
        defects.push(
          `delivery ${deliveryId} (endpoint ${list[i]!.endpoint_id}): attempt ${list[i]!.attempt_number} came ${gap} ms after the previous one, not ${delay} ms ±10 %` +
            ` (attempts at simulated hours ${list.map((a) => `${a.attempt_number}:${(sim(a.started_at) / HOUR).toFixed(3)}${a.succeeded ? ' ok' : ''}`).join(', ')})`,
        );
    }
  }

  // A: every event, each at the first attempt after it came back, within that attempt's wait.
  const received = (receiver: OutageReceiver) => {
    const counts = new Map<string, number>();
    for (const got of receiver.accepted) counts.set(got.eventId, (counts.get(got.eventId) ?? 0) + 1);
    return counts;
  };
  const atA = received(receivers.a);
  for (const event of events) if (!atA.has(event.id)) defects.push(`event ${event.id} (${event.type}) never reached A`);
  const lateness: number[] = [];
  let maxAttempts = 0;
  for (const delivery of deliveries.filter((d) => d.endpoint_id === endpoints.a)) {
    const list = byDelivery.get(delivery.id) ?? [];
    maxAttempts = Math.max(maxAttempts, list.length);
    if (delivery.status !== 'succeeded') defects.push(`A's delivery ${delivery.id} ended ${delivery.status} (${delivery.last_error})`);
    const success = list.findIndex((attempt) => attempt.succeeded);
    if (success < 0) continue;
    const first = list[0]!;
    if (sim(first.started_at) < TIMELINE.aBack && sim(first.started_at) >= TIMELINE.outageStart) {
      const firstAfter = list.findIndex((attempt) => sim(attempt.started_at) >= TIMELINE.aBack);
      if (firstAfter !== success)
        defects.push(`A's delivery ${delivery.id}: attempt ${firstAfter + 1} after A came back did not succeed (attempt ${success + 1} did)`);
      const waited = sim(list[success]!.started_at) - TIMELINE.aBack;
      const wait = success > 0 ? RETRY_DELAYS_MS[success - 1]! : 0;
      if (waited > wait * 1.1 + SLACK_MS)
        defects.push(`A's delivery ${delivery.id} arrived ${waited} ms after A came back, past its scheduled wait ${wait} ms`);
      lateness.push(waited);
    }
  }
  if (endpointRows.get(endpoints.a)?.status !== 'enabled') defects.push('A was disabled by a one-day outage (the rule is 5 days)');

  // B: disabled after 5 days of failures, nothing sent while disabled, every missed event replayed once.
  const disabledOf = (id: string) => events.find((event) => event.type === 'webhook_endpoint.disabled' && event.data?.id === id);
  const bDisabled = disabledOf(endpoints.b);
  const bAttempts = attempts.filter((attempt) => attempt.endpoint_id === endpoints.b);
  const bFirstFailure = bAttempts
    .filter((attempt) => !attempt.succeeded)
    .map((attempt) => attempt.started_at.getTime())
    .sort((x, y) => x - y)[0];
  let disabledAfterDays: number | null = null;
  if (!bDisabled) defects.push('B was never disabled though every attempt failed for 5 days');
  else {
    const disabledAt = Date.parse(bDisabled.data.disabledAt);
    const streak = disabledAt - (bFirstFailure ?? disabledAt);
    disabledAfterDays = streak / (24 * HOUR);
    if (streak < DISABLE_AFTER_FAILING_MS) defects.push(`B was disabled after ${streak} ms of failures, before 5 days`);
    if (streak > DISABLE_AFTER_FAILING_MS + 24 * HOUR * 1.1 + SLACK_MS)
      defects.push(`B was disabled ${streak} ms after its first failure: later than the next attempt after 5 days`);
    const reenabled = TIMELINE.bReenabled;
    const during = bAttempts.filter((attempt) => attempt.started_at.getTime() > disabledAt && sim(attempt.started_at) < reenabled);
    if (during.length > 0) defects.push(`${during.length} attempts to B while it was disabled`);
    if (!atA.has(bDisabled.id)) defects.push("B's webhook_endpoint.disabled event never reached A");
  }
  if (endpointRows.get(endpoints.b)?.status !== 'enabled') defects.push('B is not enabled after the merchant re-enabled it');
  const atB = received(receivers.b);
  const subscribed = events.filter((event) => event.type === 'payment.confirmed');
  for (const event of subscribed) {
    const n = atB.get(event.id) ?? 0;
    if (n !== 1) {
      const hour = (params.events.find((e) => e.id === event.id)?.at ?? Number.NaN) / HOUR;
      defects.push(`B got event ${event.id} (written at hour ${hour.toFixed(1)}) ${n} times (expected once: missed events replayed, later ones dispatched)`);
    }
  }
  // Replayed events (written before B came back) arrive at the replay, not on some later schedule.
  const writtenAt = new Map(params.events.map((event) => [event.id, event.at]));
  const lateReplay = receivers.b.accepted.filter(
    (got) => got.at > TIMELINE.bReenabled + 60_000 && (writtenAt.get(got.eventId) ?? Number.POSITIVE_INFINITY) < TIMELINE.bReenabled,
  );
  if (lateReplay.length > 0) defects.push(`${lateReplay.length} replayed events reached B more than a minute after the replay`);
  for (const id of atB.keys()) if (!subscribed.some((event) => event.id === id)) defects.push(`B got ${id}, an event kind it does not subscribe to`);

  // C: disabled by its first 410, never tried again.
  const cDisabled = disabledOf(endpoints.c);
  const cAttempts = attempts.filter((attempt) => attempt.endpoint_id === endpoints.c);
  if (!cDisabled || !String(cDisabled.data.reason).includes('410')) defects.push('C answered 410 Gone but was not disabled for it');
  // Deliveries already in flight when the first 410 came back are sent (a batch is claimed at
  // once); none may start after C was disabled.
  const cDisabledAt = cDisabled ? Date.parse(cDisabled.data.disabledAt) : Number.POSITIVE_INFINITY;
  const cLate = cAttempts.filter((attempt) => attempt.started_at.getTime() > cDisabledAt);
  if (cLate.length > 0) defects.push(`C had ${cLate.length} attempts after its 410 disabled it`);

  const duplicates = (counts: Map<string, number>) => [...counts.values()].reduce((sum, n) => sum + n - 1, 0);
  return {
    defects,
    events: events.length,
    deliveries: deliveries.length,
    attempts: attempts.length,
    steps: params.steps,
    durationMs: params.durationMs,
    a: {
      backlogAtReturn: lateness.length,
      maxHoursAfterReturn: Math.max(0, ...lateness) / HOUR,
      meanHoursAfterReturn: lateness.length ? lateness.reduce((x, y) => x + y, 0) / lateness.length / HOUR : 0,
      maxAttempts,
      duplicates: duplicates(atA),
    },
    b: {
      disabledAfterDays,
      reason: bDisabled?.data.reason ?? null,
      replayed: deliveries.filter((d) => d.endpoint_id === endpoints.b && d.reason === 'replay').length,
      received: receivers.b.accepted.length,
      duplicates: duplicates(atB),
    },
    c: { reason: cDisabled?.data.reason ?? null, attempts: cAttempts.length },
  };
}
