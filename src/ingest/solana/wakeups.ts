/**
 * With WebSocket up, a woken account whose new transaction was not served yet (the notification
 * often beats the node's transaction-status index) is synced again after this long, up to
 * RECHECK_ATTEMPTS times, instead of waiting for the next sweep.
 */
const RECHECK_DELAY_MS = 500;
const RECHECK_ATTEMPTS = 5;

/**
 * What wakes the Solana ingester between polls: token accounts marked dirty (an account
 * notification, a failed sync, a re-check coming due) and the wait that any of them ends early.
 */
export interface Wakeups {
  /** Marks `account` for the next pass and wakes the loop. */
  notify(account: string): void;
  /** Marks `account` for the next pass without waking the loop (it is running). */
  mark(account: string): void;
  /** Wakes the loop without an account (the socket came up or went down). */
  wake(): void;
  /** The accounts marked since the last call; none are marked after it. */
  take(): Set<string>;
  /** Whether an account is marked (the loop then runs again at once). */
  readonly pending: boolean;
  /** Sleeps up to `ms`, waking early on a notification or when `signal` aborts (also when it already has). */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  /**
   * After syncing `account`: when it was `woken` and came back `unfinished` (nothing new, or listed
   * signatures not stored yet) it is marked again in RECHECK_DELAY_MS, at most RECHECK_ATTEMPTS
   * times per wake-up, and only when `enabled` (the WebSocket is up: polling and sweeps sync every
   * account anyway). Otherwise its re-checks end.
   */
  recheck(account: string, params: { woken: boolean; unfinished: boolean; enabled: boolean }): void;
  /** Whether `account` is between re-checks (a re-check counts as a wake-up). */
  rechecking(account: string): boolean;
  /** Cancels every pending re-check. */
  clear(): void;
}

/** Creates the wake-ups of one Solana ingester (see {@link Wakeups}). */
export function createWakeups(): Wakeups {
  const dirty = new Set<string>();
  const rechecks = new Map<string, { attempts: number; timer: NodeJS.Timeout | undefined }>();
  let wake: (() => void) | undefined;
  const notify = (account: string) => {
    dirty.add(account);
    wake?.();
  };

  return {
    notify,
    mark: (account) => void dirty.add(account),
    wake: () => wake?.(),
    take() {
      const taken = new Set(dirty);
      dirty.clear();
      return taken;
    },
    get pending() {
      return dirty.size > 0;
    },
    async wait(ms, signal) {
      if (signal.aborted) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        wake = done;
        signal.addEventListener('abort', done, { once: true });
        function done() {
          clearTimeout(timer);
          wake = undefined;
          signal.removeEventListener('abort', done);
          resolve();
        }
      });
    },
    recheck(account, { woken, unfinished, enabled }) {
      const entry = rechecks.get(account);
      if (!woken || !unfinished || !enabled || (entry?.attempts ?? 0) >= RECHECK_ATTEMPTS) {
        if (entry?.timer) clearTimeout(entry.timer);
        rechecks.delete(account);
        return;
      }
      if (entry?.timer) return;
      const next = { attempts: (entry?.attempts ?? 0) + 1, timer: undefined as NodeJS.Timeout | undefined };
      next.timer = setTimeout(() => {
        next.timer = undefined;
        notify(account);
      }, RECHECK_DELAY_MS);
      next.timer.unref?.();
      rechecks.set(account, next);
    },
    rechecking: (account) => rechecks.has(account),
    clear() {
      for (const entry of rechecks.values()) if (entry.timer) clearTimeout(entry.timer);
      rechecks.clear();
    },
  };
}
