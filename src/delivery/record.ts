import { prepared, type Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import { appendEvent } from '../payments/outbox.ts';
import { failPendingDeliveries } from './endpoints.ts';
import { parseRetryAfter, retryDelayMs } from './schedule.ts';
import type { TransportResult } from './transport.ts';
import type { ClaimedDelivery } from './types.ts';

/** An endpoint with nothing but failed attempts for this long is disabled (Stripe, Svix: days). */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000;

/** Event sent to the merchant's other endpoints when one of its endpoints is disabled. */
export const ENDPOINT_DISABLED_EVENT = 'webhook_endpoint.disabled';

/** What became of one attempt, for metrics and logs. */
export type AttemptOutcome =
  | { kind: 'succeeded' }
  | { kind: 'retry'; nextAttemptAt: Date }
  | { kind: 'failed'; reason: string }
  | { kind: 'endpoint_disabled'; reason: string };

/** One attempt as sent and answered. */
export interface AttemptRecord {
  delivery: ClaimedDelivery;
  attemptNumber: number;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
  requestHeaders: Record<string, string>;
  /** How many signatures X-Service-Signature carried (2 during a rotation's overlap); never their values. */
  signaturesSent: number;
  result: TransportResult;
}

// Postgres text cannot hold NUL; a receiver's binary answer is stored without it.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what Postgres text refuses, so it is stripped on purpose
const clean = (text: string) => text.replace(/\u0000/g, '');

/** True when the receiver answered 2xx. */
export function isSuccess(result: TransportResult): boolean {
  return result.ok && result.status >= 200 && result.status < 300;
}

/**
 * The common case of recordAttempt for many attempts in one statement (one round trip, atomic):
 * each 2xx attempt is stored, its delivery succeeds and its endpoint's failure streak ends.
 * Callers fall back to recordAttempt per attempt if it throws; the attempt inserts are idempotent.
 *
 * Prepared (planned once per connection): its planning was about half of its cost, and the
 * generic plan is the custom one (each input row finds its delivery by primary key; the endpoints
 * with a failure streak are few), checked with `plan_cache_mode = force_generic_plan`.
 */
export async function recordSuccesses(sql: Sql, attempts: AttemptRecord[]): Promise<void> {
  if (attempts.length === 0) return;
  const column = <T>(pick: (attempt: AttemptRecord) => T) => attempts.map(pick);
  await sql.query(RECORD_SUCCESSES, [
    column(() => newId('wha')),
    column((a) => a.delivery.id),
    column((a) => a.delivery.eventId),
    column((a) => a.delivery.endpointId),
    column((a) => a.attemptNumber),
    column((a) => a.delivery.url),
    column((a) => JSON.stringify(a.requestHeaders)),
    column((a) => (a.result.ok ? a.result.status : null)),
    column((a) => (a.result.ok ? clean(a.result.bodyExcerpt) : null)),
    column((a) => a.durationMs),
    column((a) => a.startedAt),
    column((a) => a.finishedAt),
    column((a) => a.signaturesSent),
  ]);
}

const RECORD_SUCCESSES = prepared(
  `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[], $9::text[],
                            $10::int[], $11::timestamptz[], $12::timestamptz[], $13::int[])
         AS t(id, delivery_id, event_id, endpoint_id, attempt_number, url, request_headers, response_status, excerpt,
              duration_ms, started_at, finished_at, signatures_sent)
     ), attempt AS (
       INSERT INTO webhook_attempts (id, delivery_id, event_id, endpoint_id, attempt_number, url, request_headers,
                                     response_status, response_body_excerpt, error, duration_ms, succeeded, started_at, signatures_sent)
       SELECT id, delivery_id, event_id, endpoint_id, attempt_number, url, request_headers::jsonb, response_status, excerpt,
              NULL, duration_ms, true, started_at, signatures_sent
         FROM input
       ON CONFLICT (delivery_id, attempt_number) DO NOTHING
     ), streak AS (
       UPDATE webhook_endpoints SET failing_since = NULL
        WHERE id IN (SELECT endpoint_id FROM input WHERE endpoint_id IS NOT NULL) AND failing_since IS NOT NULL
     )
     UPDATE webhook_deliveries d SET attempt_count = greatest(d.attempt_count, i.attempt_number), status = 'succeeded', next_attempt_at = NULL,
            locked_until = NULL, last_attempt_at = i.finished_at, last_response_status = i.response_status, last_error = NULL,
            completed_at = i.finished_at
       FROM input i
      WHERE d.id = i.delivery_id AND d.status = 'pending'`,
);

/**
 * Stores one attempt and moves its delivery on, in one transaction: 2xx succeeds; 410 Gone
 * disables the endpoint; a refused (private) address fails at once; anything else is retried on
 * the schedule (Retry-After honoured on 429 and 503) until the attempts run out. An endpoint's
 * failure streak starts at its first failed attempt and ends at its next success; five days of
 * it disables the endpoint. A disabled endpoint's pending deliveries end, and the merchant's
 * other endpoints get a `webhook_endpoint.disabled` event.
 */
export async function recordAttempt(sql: Sql, attempt: AttemptRecord, params: { random?: () => number } = {}): Promise<AttemptOutcome> {
  const { delivery, result } = attempt;
  const status = result.ok ? result.status : null;
  const succeeded = isSuccess(result);
  const error = result.ok ? (succeeded ? null : `HTTP ${status}`) : result.error;

  await sql.query(
    `INSERT INTO webhook_attempts (id, delivery_id, event_id, endpoint_id, attempt_number, url, request_headers,
                                   response_status, response_body_excerpt, error, duration_ms, succeeded, started_at, signatures_sent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (delivery_id, attempt_number) DO NOTHING`,
    [
      newId('wha'),
      delivery.id,
      delivery.eventId,
      delivery.endpointId,
      attempt.attemptNumber,
      delivery.url,
      attempt.requestHeaders,
      status,
      result.ok ? clean(result.bodyExcerpt) : null,
      error === null ? null : clean(error),
      attempt.durationMs,
      succeeded,
      attempt.startedAt,
      attempt.signaturesSent,
    ],
  );

  const now = attempt.finishedAt;
  let outcome: AttemptOutcome;
  let disableReason: string | undefined;
  if (succeeded) {
    outcome = { kind: 'succeeded' };
  } else if (!result.ok && result.unsafe) {
    outcome = { kind: 'failed', reason: result.error };
  } else if (status === 410) {
    disableReason = 'the endpoint answered 410 Gone';
    outcome = delivery.endpointId ? { kind: 'endpoint_disabled', reason: disableReason } : { kind: 'failed', reason: disableReason };
  } else {
    const retryAfterMs = result.ok && (status === 429 || status === 503) ? parseRetryAfter(result.headers['retry-after'], now) : undefined;
    const delay = retryDelayMs(attempt.attemptNumber, { random: params.random, retryAfterMs });
    outcome =
      delay === undefined
        ? { kind: 'failed', reason: `no success after ${attempt.attemptNumber} attempts` }
        : { kind: 'retry', nextAttemptAt: new Date(now.getTime() + delay) };
  }

  // Endpoint row first, then the delivery row: the order disabling and deleting lock in, so
  // concurrent attempts and merchant changes never deadlock.
  if (delivery.endpointId) {
    if (succeeded) {
      await sql.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [delivery.endpointId]);
    } else if (!disableReason) {
      const { rows } = await sql.query<{ failing_since: Date }>(
        'UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, $2) WHERE id = $1 RETURNING failing_since',
        [delivery.endpointId, attempt.startedAt],
      );
      const since = rows[0]?.failing_since;
      if (since && now.getTime() - since.getTime() >= DISABLE_AFTER_FAILING_MS) {
        disableReason = `every attempt failed for 5 days (since ${since.toISOString()})`;
        outcome = { kind: 'endpoint_disabled', reason: disableReason };
      }
    }
    if (disableReason && !(await disableEndpoint(sql, delivery, disableReason, now))) {
      // Another attempt disabled it first; this delivery simply ended with it.
      outcome = { kind: 'failed', reason: 'endpoint disabled' };
    }
  }
  const pending = outcome.kind === 'retry';
  await sql.query(
    `UPDATE webhook_deliveries SET
       attempt_count = greatest(attempt_count, $2),
       status = $3::text,
       next_attempt_at = $4::timestamptz,
       locked_until = NULL,
       last_attempt_at = $5::timestamptz,
       last_response_status = $6,
       last_error = $7,
       completed_at = CASE WHEN $3::text = 'pending' THEN NULL ELSE $5::timestamptz END
     WHERE id = $1 AND status = 'pending'`,
    [
      delivery.id,
      attempt.attemptNumber,
      succeeded ? 'succeeded' : pending ? 'pending' : 'failed',
      outcome.kind === 'retry' ? outcome.nextAttemptAt : null,
      now,
      status,
      error === null ? null : clean(error),
    ],
  );

  return outcome;
}

/** @returns false when the endpoint was no longer enabled (someone else disabled it). */
async function disableEndpoint(sql: Sql, delivery: ClaimedDelivery, reason: string, now: Date): Promise<boolean> {
  const { rows } = await sql.query<{ url: string }>(
    `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, disabled_at = $3, updated_at = now()
      WHERE id = $1 AND status = 'enabled' RETURNING url`,
    [delivery.endpointId, reason, now],
  );
  if (rows.length === 0) return false;
  await failPendingDeliveries(sql, delivery.endpointId!, `endpoint disabled: ${reason}`, delivery.id);
  await appendEvent(sql, {
    merchantId: delivery.merchantId,
    livemode: delivery.livemode,
    type: ENDPOINT_DISABLED_EVENT,
    data: { id: delivery.endpointId, url: rows[0]!.url, status: 'disabled', reason, disabledAt: now.toISOString() },
  });
  return true;
}
