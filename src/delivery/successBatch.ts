import type { Store } from '../store/index.ts';
import { recordSuccesses, type AttemptRecord } from './record.ts';

/** Most successes written by one statement; bounds the statement's size and a failure's blast radius. */
const MAX_BATCH = 64;

/**
 * Group commit for successful attempts: `record` queues one and resolves once it is stored.
 * One write runs at a time; successes that finish while it runs go into the next one, so an idle
 * worker writes at once (no added delay) and a busy one writes many per round trip. A failed
 * batch rejects each of its callers, who fall back to recording alone.
 */
export function createSuccessBatch(store: Store): { record(attempt: AttemptRecord): Promise<void> } {
  let queue: { attempt: AttemptRecord; resolve: () => void; reject: (error: unknown) => void }[] = [];
  let writing = false;

  async function flush(): Promise<void> {
    if (writing || queue.length === 0) return;
    writing = true;
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
      writing = false;
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
