import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import type { SecretBox } from '../internal/crypto.ts';
import type { createDeliveryMetrics } from './metrics.ts';
import { isSuccess, recordAttempt, type AttemptOutcome } from './record.ts';
import type { createSuccessBatch } from './successBatch.ts';
import type { createSendSlots } from './sendSlots.ts';
import { loggedHeaders, signedHeaders } from './sign.ts';
import { ensureMerchantSecret } from './secrets.ts';
import type { WebhookTransport } from './transport.ts';
import type { ClaimedDelivery, Clock } from './types.ts';

/** What one attempt needs from the delivery loop (./index.ts), which owns the slots and leases. */
export interface AttemptContext {
  store: Store;
  box: SecretBox;
  clock: Clock;
  logger: Logger;
  metrics: ReturnType<typeof createDeliveryMetrics>;
  slots: ReturnType<typeof createSendSlots>;
  successes: ReturnType<typeof createSuccessBatch>;
  transportFor: (livemode: boolean) => WebhookTransport;
  random?: (() => number) | undefined;
  /** Called once the HTTP request is over (its send slot is free), before the outcome is recorded. */
  onSlotFree: () => void;
}

/** Most opened signing secrets a worker keeps (a merchant's current and previous one each). */
const OPENED_SECRETS_MAX = 1024;

/**
 * One delivery attempt, the seam between the loop (claiming, leases, waking) and a single
 * delivery: open the signing secrets, sign, POST within the target's send slot, then record the
 * outcome (retry, fail, disable the endpoint) and its metrics and log line. Never throws: an
 * attempt that cannot be recorded leaves its lease to run out, and the delivery is tried again.
 */
export function createAttempt(ctx: AttemptContext): (delivery: ClaimedDelivery) => Promise<void> {
  const { store, box, clock, logger, metrics } = ctx;
  // Opened signing secrets by their sealed text: opening (AES-256-GCM) was a few percent of a
  // delivery's CPU, paid at every attempt for the same few secrets (docs/benchmarks.md, issue 28
  // goal 5). A rotated secret is sealed anew, so a stale entry is never used; the map is emptied
  // when full, so it holds at most OPENED_SECRETS_MAX of them.
  const opened = new Map<string, string>();
  const open = (sealed: string): string => {
    let secret = opened.get(sealed);
    if (secret === undefined) {
      secret = box.open(sealed);
      if (opened.size >= OPENED_SECRETS_MAX) opened.clear();
      opened.set(sealed, secret);
    }
    return secret;
  };
  return async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const attemptNumber = delivery.attemptCount + 1;
    const fields = { delivery_id: delivery.id, event_id: delivery.eventId, endpoint_id: delivery.endpointId, attempt: attemptNumber };
    // Not a child logger: creating one per attempt costs more than the attempt's own logging.
    const log = {
      debug: (entry: object) => logger.debug({ ...fields, ...entry }),
      info: (entry: object) => logger.info({ ...fields, ...entry }),
      warn: (entry: object) => logger.warn({ ...fields, ...entry }),
      error: (entry: object) => logger.error({ ...fields, ...entry }),
    };
    let secrets: string[];
    try {
      // A merchant from before migration 014 gets its sandbox secret on its first sandbox delivery.
      const current = delivery.secretSealed ?? (await store.transaction((sql) => ensureMerchantSecret(sql, box, delivery)));
      secrets = [current, delivery.previousSecretSealed].filter((sealed) => sealed !== null).map(open);
    } catch (error) {
      // Wrong SVC_ENCRYPTION_KEY (or the database down): the lease runs out and it is tried again.
      log.error({ msg: 'Cannot open the webhook signing secret', err: error });
      return;
    }
    // The slot is held for the request only: recording the outcome is no load on the receiver.
    const { startedAt, signed, result, durationMs } = await ctx.slots.run(delivery.endpointId ?? delivery.url, async () => {
      const startedAt = clock.now();
      const signed = signedHeaders({
        secrets,
        body: delivery.body,
        eventId: delivery.eventId,
        eventType: delivery.eventType,
        deliveryId: delivery.id,
        now: startedAt,
      });
      const t0 = performance.now();
      const result = await ctx.transportFor(delivery.livemode)({ url: delivery.url, headers: signed, body: delivery.body });
      return { startedAt, signed, result, durationMs: Math.round(performance.now() - t0) };
    });
    ctx.onSlotFree();
    const finishedAt = clock.now();
    const record = {
      delivery,
      attemptNumber,
      startedAt,
      finishedAt,
      durationMs,
      requestHeaders: loggedHeaders(signed),
      signaturesSent: secrets.length,
      result,
    };
    try {
      const fast =
        isSuccess(result) &&
        (await ctx.successes.record(record).then(
          () => true,
          () => false,
        ));
      const outcome: AttemptOutcome = fast ? { kind: 'succeeded' } : await store.transaction((sql) => recordAttempt(sql, record, { random: ctx.random }));
      metrics.attempts.inc({ outcome: outcome.kind });
      metrics.attemptDuration.observe(durationMs / 1000);
      const status = result.ok ? result.status : undefined;
      if (outcome.kind === 'succeeded') {
        metrics.eventToDelivery.observe(Math.max(0, Date.now() - delivery.eventCreatedAt.getTime()) / 1000);
        log.debug({ msg: 'Webhook delivered', status, duration_ms: durationMs });
      } else if (outcome.kind === 'retry') {
        log.info({
          msg: 'Webhook attempt failed, will retry',
          status,
          error: result.ok ? undefined : result.error,
          next_attempt_at: outcome.nextAttemptAt.toISOString(),
        });
      } else if (outcome.kind === 'failed') {
        log.warn({ msg: 'Webhook delivery failed for good', status, reason: outcome.reason });
      } else {
        metrics.endpointsDisabled.inc();
        log.error({ msg: 'Webhook endpoint disabled', reason: outcome.reason }); // no URL: it may carry the receiver's token
      }
    } catch (error) {
      // The attempt is not recorded; the lease runs out and the delivery is tried again.
      log.error({ msg: 'Could not record webhook attempt', err: error });
    }
  };
}
