/**
 * One shutdown path for the whole process (after ponder's `createShutdown`): every long-lived
 * part registers a close callback with `add`; `kill` aborts `signal` first, so every loop of the
 * form `while (!signal.aborted)` stops taking new work, then runs the callbacks in reverse order
 * of registration: the HTTP server drains before the workers stop, and the database closes last.
 */
export interface Shutdown {
  readonly signal: AbortSignal;
  add(name: string, close: () => Promise<void> | void): void;
  /** Idempotent: later calls return the first call's promise. */
  kill(reason?: string): Promise<void>;
  readonly isKilled: boolean;
}

export function createShutdown(params: { onError?: (name: string, error: unknown) => void } = {}): Shutdown {
  const controller = new AbortController();
  const callbacks: { name: string; close: () => Promise<void> | void }[] = [];
  let killing: Promise<void> | undefined;

  return {
    signal: controller.signal,
    get isKilled() {
      return controller.signal.aborted;
    },
    add(name, close) {
      callbacks.push({ name, close });
    },
    kill(reason = 'shutdown') {
      killing ??= (async () => {
        controller.abort(reason);
        for (const { name, close } of callbacks.reverse()) {
          try {
            await close();
          } catch (error) {
            params.onError?.(name, error);
          }
        }
      })();
      return killing;
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts: loops sleep with this, never with a bare timer. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
