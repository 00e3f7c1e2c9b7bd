/**
 * The events of the receiver-outage run (receiverOutageRun.ts), written to the outbox the way the
 * engine writes them (appendEvent, in a transaction), each with a `seq` in its data: one logical
 * event, so the audit can tell a redelivery under the same id from a copy under a new one.
 */
import { appendEvent, type EventType } from '../../../src/payments/outbox.ts';
import type { Owner } from '../../../src/delivery/index.ts';
import type { Store } from '../../../src/store/index.ts';

/** Kinds in turn: B subscribes to one of them. */
const KINDS: EventType[] = ['payment.confirming', 'payment.confirmed', 'payment.settled', 'payment.expired'];

export interface OutageEvent {
  id: string;
  seq: number;
  type: string;
  /** Simulated ms from the start when it was written. */
  at: number;
  /** Real created_at (ms, floored), what replay windows are cut by. */
  createdMs: number;
}

export function createAppendedEvents(store: Store, owner: Owner) {
  const all: OutageEvent[] = [];
  return {
    all,
    /** Writes `count` events at simulated offset `at` (hour `hour`). */
    async append(count: number, at: number, hour: number): Promise<void> {
      const made = await store.transaction(async (sql) => {
        const envelopes = [];
        for (let i = 0; i < count; i++) {
          const seq = all.length + i;
          const type = KINDS[seq % KINDS.length]!;
          envelopes.push(await appendEvent(sql, { ...owner, type, data: { seq, hour, id: `ses_outage${seq}`, status: type.split('.')[1] } }));
        }
        return envelopes;
      });
      const { rows } = await store.query<{ id: string; ms: number }>(
        'SELECT id, floor(extract(epoch FROM created_at) * 1000)::float8 AS ms FROM events WHERE id = ANY($1)',
        [made.map((envelope) => envelope.id)],
      );
      const created = new Map(rows.map((row) => [row.id, Number(row.ms)]));
      for (const envelope of made) all.push({ id: envelope.id, seq: all.length, type: envelope.event, at, createdMs: created.get(envelope.id)! });
    },
    /**
     * Replay windows [from, to) covering every event of `type` written before `until`, each
     * holding at most about `chunk` of the merchant's events of that kind (the replay limit is 1,000).
     */
    windowsFor(type: string, until: Date, chunk: number): Array<{ from: Date; to: Date }> {
      const times = all.filter((event) => event.type === type && event.createdMs < until.getTime()).map((event) => event.createdMs);
      const windows: Array<{ from: Date; to: Date }> = [];
      for (let i = 0; i < times.length; i += chunk) {
        const to = i + chunk < times.length ? times[i + chunk]! : until.getTime();
        if (to > times[i]!) windows.push({ from: new Date(times[i]!), to: new Date(to) });
      }
      return windows;
    },
  };
}
