import pg from 'pg';
import type { Registry } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import type { Config } from '../internal/config.ts';
import type { SecretBox } from '../internal/crypto.ts';
import { createFailureBackoff } from '../internal/failureBackoff.ts';
import { sleep } from '../internal/shutdown.ts';
import { claimDueDeliveries, nextDueAt } from './claim.ts';
import { dispatchEvents } from './dispatch.ts';
import { createDeliveryMetrics } from './metrics.ts';
import { createSuccessBatch } from './successBatch.ts';
import { createSendSlots } from './sendSlots.ts';
import { createHttpTransport, type WebhookTransport } from './transport.ts';
import { createAttempt } from './attempt.ts';
import { LEASE_MS, systemClock, type ClaimedDelivery, type Clock } from './types.ts';

export * from './endpoints.ts';
export * from './log.ts';
export * from './replay.ts';
export * from './manage.ts';
export * from './secrets.ts';
export { checkWebhookUrl, UnsafeWebhookUrlError } from './ssrf.ts';
export { RETRY_DELAYS_MS, MAX_ATTEMPTS, retryDelayMs } from './schedule.ts';
export { DISABLE_AFTER_FAILING_MS, ENDPOINT_DISABLED_EVENT } from './record.ts';
export { createHttpTransport, RESPONSE_EXCERPT_BYTES, type WebhookTransport, type TransportResult } from './transport.ts';
export { LEASE_MS, type Clock, type ClaimedDelivery } from './types.ts';

/** HTTP requests at once per process: enough to hide receivers' latency, few enough for a 2-core host. */
const DEFAULT_CONCURRENCY = 32;

/**
 * Leases a worker may hold per HTTP slot, per process and per target: a delivery keeps its lease
 * after its response until its outcome is durably recorded, and meanwhile its slot sends the next
 * one. With one lease per slot, each target's rate was its cap divided by a whole round trip plus
 * a durable commit; with two, a commit taking as long as a request no longer halves it. It also
 * bounds the requests to one target across worker processes (leases are counted in the
 * database): twice the per-process cap.
 */
const LEASES_PER_SLOT = 2;

/**
 * The longest idle wait between looks at the queue. Wake-ups normally come from NOTIFY (new
 * events, redeliveries) or from the next due retry; this bounds the delay when a notification is
 * lost (listener reconnecting) or another process scheduled a retry.
 */
const DEFAULT_POLL_INTERVAL_MS = 1_000;

/**
 * Outbox events turned into deliveries per dispatch transaction: a dispatch costs several round
 * trips whatever its size, and its deliveries wait as due rows that any worker claims.
 */
const DISPATCH_BATCH = 128;

/** Pause after an unexpected error in the loop (database down), so a failure does not spin. */
/** Waits after a failed pass (the database down, mostly): 1 s doubling to 30 s, logged once per outage. */
const ERROR_BACKOFF = { initialMs: 1_000, maxMs: 30_000 };

/** The webhook delivery stage: outbox events in, signed HTTP POSTs out, every attempt logged. */
export interface Delivery {
  /** Runs the loop in the background until `stop`. */
  start(): Promise<void>;
  /** Stops taking work, waits for attempts in flight, releases connections. */
  stop(): Promise<void>;
  /**
   * One pass, for tests and tools: dispatches new events, sends what is due at `clock.now()`
   * and waits for those attempts. @returns how many deliveries were started.
   */
  runOnce(): Promise<number>;
  /** Repeats `runOnce` until nothing is due at `clock.now()`. @returns attempts made. */
  drain(): Promise<number>;
}

export interface DeliveryParams {
  store: Store;
  logger: Logger;
  metrics: Registry;
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookAllowPrivateSandbox'>;
  box: SecretBox;
  clock?: Clock;
  /** The HTTP sender; default undici with the SSRF guard (createHttpTransport). */
  fetch?: WebhookTransport;
  /** Source of jitter in [0, 1); tests pin it. */
  random?: () => number;
  /** HTTP requests at once in this process; default 32. */
  concurrency?: number;
  /**
   * HTTP requests at once to one target (endpoint or session URL) from this process; default half
   * of `concurrency`. Across worker processes, at most twice this (the target's leases).
   */
  perTargetConcurrency?: number;
  pollIntervalMs?: number;
}

/**
 * Creates the delivery stage. Retries are rows (`webhook_deliveries.next_attempt_at`), claimed
 * with `FOR UPDATE SKIP LOCKED` under a lease, so any number of worker processes share the
 * queue and a restart or a crash loses no delivery. Time comes from `clock`, so tests move
 * through the retry schedule without sleeping.
 */
export function createDelivery(params: DeliveryParams): Delivery {
  const { store, box } = params;
  const clock = params.clock ?? systemClock;
  const logger = params.logger.child({ stage: 'delivery' });
  const metrics = createDeliveryMetrics(params.metrics);
  // One transport per mode: the SSRF guard may allow loopback/private receivers for sandbox
  // endpoints (local development) while refusing them for live ones.
  const ownTransports = params.fetch
    ? undefined
    : {
        live: createHttpTransport({ allowPrivate: params.config.webhookAllowPrivate }),
        sandbox: createHttpTransport({ allowPrivate: params.config.webhookAllowPrivateSandbox }),
      };
  const transportFor = (livemode: boolean): WebhookTransport => params.fetch ?? (livemode ? ownTransports!.live : ownTransports!.sandbox);
  const concurrency = params.concurrency ?? DEFAULT_CONCURRENCY;
  const pollIntervalMs = params.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  // Half the slots at most for one receiver: a dead endpoint with a backlog leaves room for the rest.
  const perTarget = params.perTargetConcurrency ?? Math.max(1, Math.floor(concurrency / 2));
  const slots = createSendSlots({ concurrency, perTarget });
  const leaseLimit = concurrency * LEASES_PER_SLOT;
  const perTargetLeases = perTarget * LEASES_PER_SLOT;
  const successes = createSuccessBatch(store);
  /** Attempts under way (claimed, not yet recorded), for stop() and runOnce(). */
  const inFlight = new Set<Promise<void>>();
  /** Leases held: claimed and not yet recorded. */
  let held = 0;
  const controller = new AbortController();
  let loop: Promise<void> | undefined;
  let listener: pg.Client | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  let saturated = false;
  let backlog = false;
  let blockedAt: number | undefined;
  /** The last fill skipped its claim (its dispatch leased all it made): idle() checks for due work. */
  let claimSkipped = false;
  // Dispatching finds new outbox events; it runs when a NOTIFY says some were committed, after a
  // full batch, and at least every poll interval (a notification lost while the listener
  // reconnects), not on every claim: an empty look at the outbox cost as much as the claim.
  let dispatchDue = true;
  let dispatchedAt = 0;

  /**
   * Deliveries this worker can take now: free HTTP slots, within the lease limit. Deliveries
   * waiting for their target's slot do not count: a target at its cap must not keep others from
   * being claimed. None waits long: with at most twice `concurrency` leases and `concurrency`
   * requests, one waits for at most two rounds of requests (30 s of timeouts), well within its
   * 60 s lease.
   */
  const room = () => Math.min(concurrency - slots.running(), leaseLimit - held);

  /** A lease was given up or an answer came: claim again once enough room has opened. */
  function settled(): void {
    // Refill at half room rather than per completion: fewer, larger claims. When blocked (due
    // work capped per target), once half a target's slots' worth of leases have been recorded (a
    // quarter of its leases): waiting for half of them left leases unused, measured 6-78 %
    // slower in three pairs of bench runs, with no less CPU per delivery.
    if (saturated && room() >= concurrency / 2) wake();
    else if (blockedAt !== undefined && (held === 0 || blockedAt - held >= Math.max(1, perTarget / 2))) wake();
  }

  function wake(): void {
    woken = true;
    wakeUp?.();
  }

  const attempt = createAttempt({ store, box, clock, logger, metrics, slots, successes, transportFor, random: params.random, onSlotFree: () => settled() });

  function launch(delivery: ClaimedDelivery): void {
    held += 1;
    const running = attempt(delivery).finally(() => {
      held -= 1;
      inFlight.delete(running);
      settled();
    });
    inFlight.add(running);
  }

  /**
   * Dispatches new events if due, then claims as much as there is room for; returns how many
   * deliveries started and how many of them the claim found.
   *
   * Dispatch takes no more events than this worker has room for, and gets back leased the new
   * deliveries it can send (dispatchEvents' DispatchLease): each is written once and started at
   * once after the commit, with no claim. Events beyond the room stay in the outbox for the next
   * fill or for another worker with room; a full worker dispatches nothing. The claim then serves
   * what dispatch did not lease (a target at its cap, or with older deliveries waiting), retries,
   * redeliveries and expired leases; it is skipped when the dispatch of this fill leased every
   * delivery it made, and idle() looks for due work then (nextDueAt) before waiting.
   */
  async function fill(params: { dispatch?: boolean } = {}): Promise<{ started: number; claimed: number }> {
    const now = clock.now();
    let dispatched = 0;
    let dispatchLimit = 0;
    let leased = 0;
    claimSkipped = false;
    if (params.dispatch || dispatchDue || !listener || performance.now() - dispatchedAt >= pollIntervalMs) {
      dispatchLimit = Math.min(DISPATCH_BATCH, room());
      if (dispatchLimit > 0) {
        dispatchDue = false; // before the look: a notification arriving during it asks for another
        dispatchedAt = performance.now();
        const lease = { until: new Date(now.getTime() + LEASE_MS), max: dispatchLimit, perTarget: perTargetLeases };
        const result = await store.transaction((sql) => dispatchEvents(sql, { now, limit: dispatchLimit, lease }));
        dispatched = result.events;
        leased = result.leased.length;
        result.leased.forEach(launch);
        if (dispatched >= dispatchLimit) dispatchDue = true;
        claimSkipped = result.deliveries > 0 && leased === result.deliveries;
      }
    }
    const free = room();
    // One statement, its lease committed without waiting for the WAL flush (claimDueDeliveries):
    // the claim is on the path of every delivery dispatch did not lease.
    const due = free > 0 && !claimSkipped ? await claimDueDeliveries(store, { now, limit: free, perTarget: perTargetLeases }) : [];
    due.forEach(launch);
    // A full batch of events or of due deliveries means more may be waiting: go again at once.
    backlog = (dispatchLimit > 0 && dispatched >= dispatchLimit) || (free > 0 && due.length >= free);
    saturated = room() <= 0;
    return { started: leased + due.length, claimed: due.length };
  }

  async function runOnce(): Promise<number> {
    const { started } = await fill({ dispatch: true });
    await Promise.all([...inFlight]);
    return started;
  }

  async function listen(): Promise<void> {
    const client = new pg.Client({ connectionString: (store.pool as unknown as { options: { connectionString: string } }).options.connectionString });
    client.on('notification', () => {
      dispatchDue = true;
      wake();
    });
    client.on('error', (error) => {
      logger.warn({ msg: 'Delivery listener lost its connection; polling until it reconnects', err: error });
      if (listener === client) listener = undefined;
      client.end().catch(() => {});
    });
    await client.connect();
    await client.query('LISTEN svc_delivery_wakeup');
    listener = client;
  }

  /** Resolves after `ms`, or at once on wake() (a notification, a free slot, stop()). */
  function waitForWake(ms: number): Promise<void> {
    if (woken || controller.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      wakeUp = done;
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
    });
  }

  /** Waits for work: `claimedSome` says the last claim found due deliveries, so more may be due but capped. */
  async function idle(claimedSome: boolean): Promise<void> {
    if (woken) return;
    const due = claimedSome ? undefined : await nextDueAt(store);
    const untilDue = claimedSome ? 0 : due ? due.getTime() - clock.now().getTime() : pollIntervalMs;
    // Due now and the last fill did not claim: claim on the next.
    if (untilDue <= 0 && claimSkipped) return;
    if (untilDue <= 0) {
      // Due now yet not claimed: capped per target, or leased elsewhere. Wait for some of our
      // leases to be recorded (or the poll interval) instead of asking again in a tight loop.
      blockedAt = held;
      await waitForWake(pollIntervalMs);
      blockedAt = undefined;
      return;
    }
    await waitForWake(Math.min(untilDue, pollIntervalMs));
  }

  async function run(): Promise<void> {
    const { signal } = controller;
    const failures = createFailureBackoff({ logger, what: 'Delivery loop', ...ERROR_BACKOFF });
    let listenFailing = false;
    while (!signal.aborted) {
      try {
        // Without the LISTEN connection the loop still polls: say so once, not on every pass.
        if (!listener) {
          await listen().then(
            () => (listenFailing = false),
            (error) => {
              if (!listenFailing) logger.warn({ msg: 'Delivery listener could not connect; polling until it does', err: error });
              listenFailing = true;
            },
          );
        }
        woken = false;
        const { claimed } = await fill();
        failures.succeeded();
        if (saturated) await waitForWake(pollIntervalMs);
        else if (!backlog) await idle(claimed > 0);
      } catch (error) {
        dispatchDue = true;
        await sleep(failures.failed(error), signal);
      }
    }
  }

  return {
    async start() {
      if (loop) return;
      await listen().catch((error) => logger.warn({ msg: 'Delivery listener could not connect', err: error }));
      loop = run();
      logger.info({ msg: 'Webhook delivery started', concurrency });
    },
    async stop() {
      controller.abort();
      wakeUp?.();
      await loop;
      await Promise.allSettled([...inFlight]);
      await listener?.end().catch(() => {});
      listener = undefined;
      await Promise.all([ownTransports?.live.close(), ownTransports?.sandbox.close()]);
    },
    runOnce,
    async drain() {
      let total = 0;
      for (;;) {
        const started = await runOnce();
        total += started;
        if (started === 0 && !backlog) return total;
      }
    },
  };
}
