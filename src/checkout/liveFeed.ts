import type { ServerResponse } from 'node:http';
import { sleep } from '../internal/shutdown.ts';

/**
 * How often a live feed rereads its session. Block times are 0.4 to 3 s on the supported chains,
 * so one second makes each confirmation show within about a block. Feeds wake on the same clock
 * ticks and their reads are batched (see createBatchedReader), so a process costs one query a
 * second however many pages are open.
 */
export const FEED_POLL_MS = 1000;

/** A comment line this often keeps proxies and load balancers from closing an idle stream. */
export const FEED_HEARTBEAT_MS = 15_000;

/**
 * A stream ends after this long even if the session is still open; EventSource reconnects by
 * itself, which spreads long-lived connections over processes after a deploy.
 */
export const FEED_MAX_MS = 10 * 60_000;

/** Reconnect delay the browser is told to use after a dropped stream. */
const RETRY_MS = 3000;

/** The open feeds of one HTTP server, so shutdown can end them (they never go idle by themselves). */
export interface LiveFeeds {
  add(controller: AbortController): void;
  delete(controller: AbortController): void;
  closeAll(): void;
  readonly size: number;
}

export function createLiveFeeds(): LiveFeeds {
  const open = new Set<AbortController>();
  return {
    add: (controller) => void open.add(controller),
    delete: (controller) => void open.delete(controller),
    closeAll() {
      for (const controller of open) controller.abort();
      open.clear();
    },
    get size() {
      return open.size;
    },
  };
}

/**
 * Streams `read()` as server-sent events on `res`: one `status` event now and one whenever the
 * JSON changes, until `done(value)` holds for a sent value, the client goes away, the stream
 * reaches {@link FEED_MAX_MS}, or `signal` aborts (shutdown). The response must already have
 * its headers written. Reading fails quietly into a retry: the feed is advisory, the page also
 * polls when a stream dies.
 */
export async function runLiveFeed<T>(params: {
  res: ServerResponse;
  read: () => Promise<T | undefined>;
  done: (value: T) => boolean;
  signal: AbortSignal;
}): Promise<void> {
  const { res, signal } = params;
  const started = Date.now();
  let lastSent = '';
  let lastWrite = Date.now();
  res.write(`retry: ${RETRY_MS}\n\n`);
  while (!signal.aborted && !res.destroyed && Date.now() - started < FEED_MAX_MS) {
    let value: T | undefined;
    try {
      value = await params.read();
    } catch {
      value = undefined;
    }
    if (value !== undefined) {
      const text = JSON.stringify(value);
      if (text !== lastSent) {
        res.write(`event: status\ndata: ${text}\n\n`);
        lastSent = text;
        lastWrite = Date.now();
        if (params.done(value)) break;
      }
    }
    if (Date.now() - lastWrite >= FEED_HEARTBEAT_MS) {
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
    // Wake on the next whole tick of the clock, with every other feed, so their reads batch.
    await sleep(FEED_POLL_MS - (Date.now() % FEED_POLL_MS), signal).catch(() => {});
  }
  if (!res.destroyed) res.end();
}

/**
 * Collects the `read(id)` calls made in one turn of the event loop and answers them with one
 * `loadMany(ids)`: the live feeds of every open page, waking on the same tick, cost one query.
 */
export function createBatchedReader<T>(loadMany: (ids: string[]) => Promise<Map<string, T>>): (id: string) => Promise<T | undefined> {
  let pending: Map<string, ((value: T | undefined) => void)[]> | undefined;
  let failed: ((error: unknown) => void)[] = [];
  return (id) =>
    new Promise<T | undefined>((resolve, reject) => {
      if (!pending) {
        pending = new Map();
        failed = [];
        setImmediate(async () => {
          const batch = pending!;
          const rejects = failed;
          pending = undefined;
          try {
            const found = await loadMany([...batch.keys()]);
            for (const [key, resolvers] of batch) for (const done of resolvers) done(found.get(key));
          } catch (error) {
            for (const fail of rejects) fail(error);
          }
        });
      }
      pending.set(id, [...(pending.get(id) ?? []), resolve]);
      failed.push(reject);
    });
}
