import type { Store } from '../store/index.ts';
import { recordSuccesses, type AttemptRecord } from './record.ts';

/** Most successes written by one statement; bounds the statement's size and a failure's blast radius. */
const MAX_BATCH = 64;

/**
 * Writes in flight at once. Each write waits for its commit's WAL flush (milliseconds on a shared
 * disk); with one at a time, a success finishing just after a write began waited for that flush
 * and then its own, and a target's deliveries (at most the per-target cap in flight, each holding
 * its lease until recorded) spent most of their cycle there. Concurrent commits share a flush in
 * Postgres, so a few writes at once cost little more than one.
 */
const MAX_WRITES = 4;

/**
 * Group commit for successful attempts: `record` queues one and resolves once it is stored
 * durably. Up to `MAX_WRITES` writes run at a time; successes that finish while they run go into
 * the next one, so an idle worker writes at once (no added delay) and a busy one writes many per
 * round trip. A failed batch rejects each of its callers, who fall back to recording alone.
 */
export function createSuccessBatch(store: Store): { record(attempt: AttemptRecord): Promise<void> } {
  let queue: { attempt: AttemptRecord; resolve: () => void; reject: (error: unknown) => void }[] = [];
  let writing = 0;

  async function flush(): Promise<void> {
    if (writing >= MAX_WRITES || queue.length === 0) return;
    writing += 1;
    const batch = queue.slice(0, MAX_BATCH);
    queue = queue.slice(MAX_BATCH);
    try {
      await recordSuccesses(
        store,
        batch.map((entry) => entry.attempt),
      );
      for (const entry of batch) entry.resolve();
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      writing -= 1;
      void flush();
    }
  }

  return {
    record(attempt) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ attempt, resolve, reject });
        void flush();
      });
    },
  };
}
