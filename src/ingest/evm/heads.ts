import { webSocket } from 'viem';
import type { Logger } from '../../internal/logger.ts';
import { backoffDelay, type BackoffRule } from '../../internal/failureBackoff.ts';
import { sleep } from '../../internal/shutdown.ts';
import { endpointLabel } from './rpc.ts';

/**
 * Wakes the ingester when a new block may exist: on every `newHeads` notification of a WebSocket
 * URL when one is configured, and on a timer in any case (the only source without WebSocket; a
 * safety net with it). `wait()` resolves on the next wake-up or after `pollMs`.
 */
export interface HeadSignal {
  wait(pollMs: number): Promise<void>;
  /** Whether a WebSocket subscription is live right now. */
  readonly subscribed: boolean;
  close(): void;
}

/** Reconnect backoff after a WebSocket failure: 1 s doubling to 30 s, as viem and most SDKs do. */
const RECONNECT_BACKOFF: BackoffRule = { initialMs: 1_000, maxMs: 30_000 };

/** Creates the wake-up source of one chain's ingester (see {@link HeadSignal}). */
export function createHeadSignal(params: { chain: string; wsUrls: string[]; logger: Logger; signal: AbortSignal }): HeadSignal {
  let wake: (() => void) | undefined;
  let subscribed = false;
  let unsubscribe: (() => void) | undefined;
  /** A head that arrived while the ingester was busy: the next wait returns at once. */
  let pending = false;
  // Ends the subscription loop on the daemon's stop and on close(): an ingester run can end while
  // the daemon runs on (a lost lease, a refused run) and the next run makes a head signal of its
  // own; a closed one that kept reconnecting held a socket and its keep-alive for good.
  const closed = new AbortController();
  const signal = AbortSignal.any([params.signal, closed.signal]);
  const notify = () => {
    const resolve = wake;
    wake = undefined;
    if (resolve) resolve();
    else pending = true;
  };

  async function subscribeLoop() {
    let failures = 0;
    let index = 0;
    while (!signal.aborted) {
      const url = params.wsUrls[index % params.wsUrls.length]!;
      const label = endpointLabel(url, index % params.wsUrls.length);
      // Ends this subscription's wait on shutdown; removed once it ends, so a daemon whose
      // WebSocket reconnects for weeks does not pile one listener per reconnect on the signal.
      let endOnAbort: (() => void) | undefined;
      // viem keeps one socket client per URL and options, and with `reconnect: false` it keeps a
      // closed one: every later subscription on that URL failed at once ("WebSocket request
      // failed") and the chain fell back to polling for good. Closing the client after each loss
      // drops it from viem's cache (and stops its keep-alive timer), so the next attempt opens a
      // new socket.
      let closeClient: (() => void) | undefined;
      const lost = new Promise<void>(async (resolve) => {
        endOnAbort = () => resolve();
        try {
          const transport = webSocket(url, { reconnect: false, keepAlive: { interval: 15_000 } })({ retryCount: 0 });
          const client = await transport.value!.getRpcClient();
          closeClient = () => client.close();
          const { unsubscribe: stop } = await transport.value!.subscribe({
            params: ['newHeads'],
            onData: () => {
              failures = 0;
              notify();
            },
            onError: (error: Error) => {
              params.logger.warn({ msg: 'newHeads subscription lost', chain: params.chain, endpoint: label, error: error.message?.split('\n')[0] });
              resolve();
            },
          });
          subscribed = true;
          unsubscribe = () => void stop().catch(() => {});
          params.logger.info({ msg: 'Subscribed to newHeads', chain: params.chain, endpoint: label });
          signal.addEventListener('abort', endOnAbort, { once: true });
          // Stopped while subscribing: the listener came too late to hear it.
          if (signal.aborted) resolve();
        } catch (error) {
          params.logger.warn({ msg: 'newHeads subscription failed', chain: params.chain, endpoint: label, error: (error as Error).message?.split('\n')[0] });
          resolve();
        }
      });
      await lost;
      if (endOnAbort) signal.removeEventListener('abort', endOnAbort);
      subscribed = false;
      unsubscribe?.();
      unsubscribe = undefined;
      closeClient?.();
      if (signal.aborted) break;
      failures += 1;
      index += 1;
      await sleep(backoffDelay(failures, RECONNECT_BACKOFF), signal);
    }
  }
  if (params.wsUrls.length > 0) void subscribeLoop();
  params.signal.addEventListener('abort', notify, { once: true });

  return {
    get subscribed() {
      return subscribed;
    },
    async wait(pollMs) {
      if (pending) {
        pending = false;
        return;
      }
      if (params.signal.aborted) return;
      // Whichever comes first, a head or the poll interval, ends the wait and clears the other:
      // a race with a separate sleep left its timer and abort listener behind after every head,
      // one more for each head within a poll interval (MaxListenersExceededWarning on a fast chain).
      await new Promise<void>((resolve) => {
        const finish = () => {
          clearTimeout(timer);
          params.signal.removeEventListener('abort', finish);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(finish, pollMs);
        params.signal.addEventListener('abort', finish, { once: true });
        wake = finish;
      });
    },
    close() {
      unsubscribe?.();
      closed.abort();
      notify();
    },
  };
}
