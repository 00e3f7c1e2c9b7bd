/**
 * The day-long receiver outage (issue 30, run 4), shared by bench/chaos/receiverOutage.ts and
 * test/chaos/receiverOutage.test.ts. A week of webhook delivery compressed into minutes: two real
 * delivery workers (createDelivery, real undici transport, real Postgres) run on one injected
 * clock (the delivery stage's `Clock` seam; production leaves it at the system clock) that the
 * run moves from one due time to the next, while events arrive every simulated hour. Three
 * endpoints of one merchant:
 *   A is down (HTTP 500) for 24 h, then back: every event must arrive, each at the first
 *     scheduled retry after it returned, and A must stay enabled (5 days is the disable rule);
 *   B is down (connections reset) for ~5.5 days: it must be disabled once every attempt failed
 *     for 5 days (its pending deliveries ended, `webhook_endpoint.disabled` sent to A), then the
 *     merchant re-enables it and replays the missed window: each event exactly once, same ids;
 *   C answers 410 Gone: disabled at its first attempt.
 * The audit is outageAudit.ts.
 */
import { createAppendedEvents, type OutageEvent } from './outageEvents.ts';
import { auditOutage, type OutageReport } from './outageAudit.ts';
import { startOutageReceiver } from './outageReceivers.ts';
import { changeEndpoint, createDelivery, registerEndpoint, replayWindow, type Clock } from '../../../src/delivery/index.ts';
import { nextDueAt } from '../../../src/delivery/claim.ts';
import { createMerchant } from '../../../src/accounts/index.ts';
import { createSecretBox } from '../../../src/internal/crypto.ts';
import { createLogger } from '../../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';
import { createStore } from '../../../src/store/index.ts';
import { randomBytes } from 'node:crypto';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface OutageOptions {
  /** A migrated database of the run's own (its delivery queue must hold nothing else). */
  databaseUrl: string;
  /** Events per simulated hour, for 7 days (a fraction spreads them: 0.25 is one every fourth hour). */
  eventsPerHour: number;
  log?: (line: string) => void;
}

/** The simulated timeline, in ms from the start. */
export const TIMELINE = {
  outageStart: 1 * HOUR,
  aBack: 25 * HOUR,
  bReenabled: 6 * DAY + 12 * HOUR,
  eventsUntil: 7 * DAY,
};

/**
 * Jitter drawn from five points spanning the documented ±10 %: the schedule's extremes are
 * exercised, and deliveries share due times so the run takes hundreds of steps, not thousands.
 */
const JITTER_POINTS = [0, 0.25, 0.5, 0.75, 0.9999];

export async function runReceiverOutage(options: OutageOptions): Promise<OutageReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  // The simulated week starts now: rows the database stamps with its own clock (a replay's
  // deliveries are due at `now()`) are then due at once on the simulated clock, as in production.
  const start = Date.now();
  let now = start;
  const clock: Clock = { now: () => new Date(now) };
  const box = createSecretBox(randomBytes(32));
  const stores = [1, 2, 3].map(() => createStore({ connectionString: options.databaseUrl, max: 4 }));
  const [store, workerStoreA, workerStoreB] = stores as [ReturnType<typeof createStore>, ReturnType<typeof createStore>, ReturnType<typeof createStore>];
  const receivers = {
    a: await startOutageReceiver(() => now - start),
    b: await startOutageReceiver(() => now - start),
    c: await startOutageReceiver(() => now - start),
  };
  receivers.c.mode = 'gone';
  const policy = { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true };
  const workers = [workerStoreA, workerStoreB].map((workerStore) =>
    createDelivery({
      store: workerStore,
      logger: createLogger({ level: 'silent' }),
      metrics: createMetricsRegistry({ defaultMetrics: false }),
      config: policy,
      box,
      clock,
      random: () => JITTER_POINTS[Math.floor(Math.random() * JITTER_POINTS.length)]!,
    }),
  );
  try {
    const { merchant } = await createMerchant(store, box, { name: 'Outage Shop' });
    const owner = { merchantId: merchant.id, livemode: false };
    const endpointA = (await registerEndpoint(store, box, policy, owner, { url: receivers.a.url })).endpoint;
    const endpointB = (await registerEndpoint(store, box, policy, owner, { url: receivers.b.url, enabledEvents: ['payment.confirmed'] })).endpoint;
    const endpointC = (await registerEndpoint(store, box, policy, owner, { url: receivers.c.url })).endpoint;
    const events = createAppendedEvents(store, owner);
    const hours = Math.ceil(TIMELINE.eventsUntil / HOUR);
    let nextHour = 0;
    let bReenabledAt: Date | undefined;
    let steps = 0;
    const phases = [
      {
        at: TIMELINE.outageStart,
        run: () => {
          receivers.a.mode = 'down-500';
          receivers.b.mode = 'down-reset';
        },
      },
      {
        at: TIMELINE.aBack,
        run: () => {
          receivers.a.mode = 'up';
        },
      },
      {
        at: TIMELINE.bReenabled,
        run: async () => {
          receivers.b.mode = 'up';
          await changeEndpoint(store, policy, owner, endpointB.id, { status: 'enabled' });
          // The window the merchant replays: from before the first event to the re-enabling
          // (events after it are dispatched to B as usual), in chunks under the replay limit.
          bReenabledAt = new Date();
          for (const window of events.windowsFor('payment.confirmed', bReenabledAt, 900)) await replayWindow(store, owner, endpointB.id, window);
        },
      },
    ];
    log(
      `merchant ${merchant.id}; ${options.eventsPerHour} events an hour for ${hours} hours; endpoints A ${endpointA.id}, B ${endpointB.id}, C ${endpointC.id}`,
    );
    for (;;) {
      const offset = now - start;
      for (; nextHour < hours && nextHour * HOUR <= offset; nextHour++) {
        // A fractional rate spreads its events: 0.25 is one every fourth hour.
        const count = Math.floor((nextHour + 1) * options.eventsPerHour) - Math.floor(nextHour * options.eventsPerHour);
        if (count > 0) await events.append(count, now - start, nextHour);
      }
      while (phases.length > 0 && phases[0]!.at <= offset) await phases.shift()!.run();
      await Promise.all(workers.map((worker) => worker.drain()));
      steps++;
      if (steps % 200 === 0) log(`  day ${(offset / DAY).toFixed(2)}: ${steps} steps, ${events.all.length} events, A has ${receivers.a.accepted.length}`);
      const due = (await nextDueAt(store))?.getTime();
      const candidates = [due, nextHour < hours ? start + nextHour * HOUR : undefined, phases[0] ? start + phases[0].at : undefined].filter(
        (t) => t !== undefined,
      );
      if (candidates.length === 0) break;
      // At least a second: a real worker looks at the queue every second at most that late.
      now = Math.max(Math.min(...candidates), now + 1_000);
    }
    log(`simulated ${((now - start) / DAY).toFixed(2)} days in ${steps} steps`);
    return await auditOutage({
      store,
      merchantId: merchant.id,
      start,
      events: events.all as OutageEvent[],
      endpoints: { a: endpointA.id, b: endpointB.id, c: endpointC.id },
      receivers,
      bReenabledAt: bReenabledAt!,
      steps,
      durationMs: Math.round(performance.now() - started),
    });
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await Promise.all(Object.values(receivers).map((receiver) => receiver.close()));
    await Promise.all(stores.map((s) => s.close()));
  }
}
