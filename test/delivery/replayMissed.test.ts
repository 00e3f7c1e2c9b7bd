import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { changeEndpoint, registerEndpoint, replayWindow } from '../../src/delivery/index.ts';
import { dispatchEvents } from '../../src/delivery/dispatch.ts';
import { replayEndpoint } from '../../src/delivery/replay.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, createFakeClock, delivery as createWorker, merchant } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

/**
 * POST /webhooks/{id}/replay (replayWindow) sends each event the endpoint missed exactly once:
 * the receiver-outage run (docs/reliability.md) found a re-enabled endpoint's replay resending
 * the events it had received before its outage.
 */
const db = useTestDatabase('delivery_replay_missed');
const policy = { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let down = false;
/** Deliveries answered 200, by path: failed attempts do not count as received. */
const accepted: { path: string; eventId: string }[] = [];

beforeAll(async () => {
  receiver = await startReceiver((request) => {
    if (down) return { status: 500 };
    accepted.push({ path: request.path, eventId: String(request.headers['x-service-event-id']) });
    return { status: 200 };
  });
});
afterAll(async () => {
  await receiver.close();
});

async function setup(path: string) {
  const { merchant: m } = await merchant(db.store);
  const owner = { merchantId: m.id, livemode: false };
  const { endpoint } = await registerEndpoint(db.store, box, policy, owner, { url: `${receiver.url}${path}`, enabledEvents: ['payment.confirmed'] });
  const emit = (data: Record<string, unknown> = {}) =>
    db.store.transaction((sql) => appendEvent(sql, { ...owner, type: 'payment.confirmed', data: { id: 'ses_replay', ...data } }));
  const got = () => accepted.filter((request) => request.path === path).map((request) => request.eventId);
  const window = () => ({ from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 1_000) });
  return { owner, endpoint, emit, got, window };
}

describe('replaying a window to a re-enabled endpoint', () => {
  test('each missed event once (failed while down, ended by disabling, dispatched while disabled); none it already got; a second or concurrent replay adds nothing', async () => {
    const { owner, endpoint, emit, got, window } = await setup('/b');
    const clock = createFakeClock();
    const worker = createWorker(db.store, { box, clock });
    const received = await emit({ n: 1 });
    await worker.drain();
    expect(got()).toEqual([received.id]);

    down = true;
    const failedWhileDown = await emit({ n: 2 });
    await worker.drain(); // its first attempt fails: a retry is pending
    down = false;
    await changeEndpoint(db.store, policy, owner, endpoint.id, { status: 'disabled' }); // ends that retry
    const whileDisabled = await emit({ n: 3 });
    await worker.drain(); // dispatched, no delivery to the disabled endpoint
    await changeEndpoint(db.store, policy, owner, endpoint.id, { status: 'enabled' });

    // Two replays of the window at once (two clicks, a retried request): the second waits for the
    // first to commit, then finds its deliveries pending and makes none.
    let second: Promise<number> | undefined;
    let secondDone = false;
    await db.store.transaction(async (sql) => {
      expect(await replayEndpoint(sql, owner, endpoint.id, window())).toEqual({ count: 2 });
      second = replayWindow(db.store, owner, endpoint.id, window()).finally(() => (secondDone = true));
      await sleep(300);
      expect(secondDone).toBe(false);
    });
    expect(await second).toBe(0);
    expect(await replayWindow(db.store, owner, endpoint.id, window())).toBe(0); // still pending
    clock.set(new Date(Date.now() + 1_000)); // replays are due at the database's now()
    await worker.drain();
    expect(await replayWindow(db.store, owner, endpoint.id, window())).toBe(0); // delivered now
    await worker.drain();
    expect(got().sort()).toEqual([received.id, failedWhileDown.id, whileDisabled.id].sort());
    await worker.stop();
  });

  test('an event being dispatched while the endpoint is re-enabled is waited for, and replayed if its dispatcher saw the endpoint disabled', async () => {
    const { owner, endpoint, emit, got, window } = await setup('/race');
    await changeEndpoint(db.store, policy, owner, endpoint.id, { status: 'disabled' });
    const event = await emit();
    let replay: Promise<number> | undefined;
    let replayDone = false;
    await db.store.transaction(async (sql) => {
      // A dispatcher reads the endpoint while it is disabled: no delivery to it...
      expect(await dispatchEvents(sql, { now: new Date(), limit: 100 })).toMatchObject({ deliveries: 0 });
      // ...the merchant re-enables it and replays before that dispatcher commits.
      await changeEndpoint(db.store, policy, owner, endpoint.id, { status: 'enabled' });
      replay = replayWindow(db.store, owner, endpoint.id, window()).finally(() => (replayDone = true));
      await sleep(300);
      expect(replayDone).toBe(false); // waiting for the dispatcher's commit
    });
    expect(await replay).toBe(1);
    const worker = createWorker(db.store, { box, clock: createFakeClock(new Date(Date.now() + 1_000)) });
    await worker.drain();
    expect(got()).toEqual([event.id]);
    await worker.stop();
  });
});
