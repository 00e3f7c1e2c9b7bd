/**
 * The HTTP side of a worker's concurrency: at most `concurrency` requests at once, and at most
 * `perTarget` of them to one target (endpoint, or session URL). A slot is held for the request
 * only, from sending to the response read, not while the attempt is recorded: the cap protects
 * the receiver, and the database write that follows is no load on it.
 *
 * Waiting requests start in the order they asked, except that one whose target is at its cap
 * lets the next ones to other targets go first (a busy receiver does not hold up the others).
 */
export interface SendSlots {
  /** Runs `send` once a slot for `target` is free; the slot is free again when it settles. */
  run<T>(target: string, send: () => Promise<T>): Promise<T>;
  /** Requests running now: to `target`, or in all. */
  running(target?: string): number;
  /** Requests waiting for a slot. */
  waiting(): number;
}

export function createSendSlots(params: { concurrency: number; perTarget: number }): SendSlots {
  const { concurrency, perTarget } = params;
  const byTarget = new Map<string, number>();
  let total = 0;
  const queue: { target: string; start: () => void }[] = [];

  const fits = (target: string) => total < concurrency && (byTarget.get(target) ?? 0) < perTarget;
  function take(target: string): void {
    total += 1;
    byTarget.set(target, (byTarget.get(target) ?? 0) + 1);
  }
  function release(target: string): void {
    total -= 1;
    const left = byTarget.get(target)! - 1;
    if (left === 0) byTarget.delete(target);
    else byTarget.set(target, left);
    // A queue of at most a worker's leases (a few dozen): a scan per release is cheap.
    for (let i = 0; i < queue.length && total < concurrency; ) {
      const next = queue[i]!;
      if (fits(next.target)) {
        queue.splice(i, 1);
        take(next.target);
        next.start();
      } else {
        i += 1;
      }
    }
  }

  return {
    async run(target, send) {
      // Every release starts whatever fits at once, so a request that fits now jumps no one.
      if (fits(target)) take(target);
      else await new Promise<void>((start) => queue.push({ target, start }));
      try {
        return await send();
      } finally {
        release(target);
      }
    },
    running: (target) => (target === undefined ? total : (byTarget.get(target) ?? 0)),
    waiting: () => queue.length,
  };
}
