import { address, createSolanaRpcSubscriptions } from '@solana/kit';
import type { Logger } from '../../internal/logger.ts';
import { backoffDelay, type BackoffRule } from '../../internal/failureBackoff.ts';
import { sleep } from '../../internal/shutdown.ts';
import { endpointLabel } from './rpc.ts';

/**
 * Change signals over WebSocket (SVC_SOLANA_WS_URL, failover order): `accountSubscribe` on every
 * watched token account at `confirmed` commitment, and `slotSubscribe` for the head. A signal
 * only wakes the ingester; what changed is always read over HTTP, so a lost notification costs
 * latency (the poll catches it), never a payment.
 */
export interface SolanaWatcher {
  /** Subscribes to these accounts (adds new ones; already subscribed ones are kept). */
  watch(accounts: string[]): void;
  /** True while the current WebSocket is up and subscribed. */
  readonly connected: boolean;
  stop(): void;
}

/** Reconnect backoff after a dropped socket: 1 s doubling to 30 s, so a dead URL is not hammered. */
const RECONNECT_BACKOFF: BackoffRule = { initialMs: 1_000, maxMs: 30_000 };

export function createSolanaWatcher(params: {
  urls: string[];
  logger: Logger;
  onAccountChange: (account: string) => void;
  onSlot: (slot: bigint) => void;
  /** Called when the socket comes up or goes down, so the caller can switch between waiting and polling. */
  onConnectionChange?: (connected: boolean) => void;
  signal: AbortSignal;
}): SolanaWatcher {
  const accounts = new Set<string>();
  let generation: AbortController | undefined;
  let connected = false;
  let urlIndex = 0;
  let failures = 0;
  const stopped = new AbortController();
  params.signal.addEventListener('abort', () => stopped.abort(), { once: true });

  async function subscribeAccount(subscriptions: ReturnType<typeof createSolanaRpcSubscriptions>, account: string, signal: AbortSignal) {
    const notifications = await subscriptions
      .accountNotifications(address(account), { commitment: 'confirmed', encoding: 'base64' })
      .subscribe({ abortSignal: signal });
    void (async () => {
      try {
        for await (const _ of notifications) params.onAccountChange(account);
      } catch (error) {
        if (!signal.aborted) reconnect(error);
      }
    })();
  }

  function reconnect(error: unknown) {
    if (stopped.signal.aborted) return;
    if (connected) params.onConnectionChange?.(false);
    connected = false;
    failures += 1;
    params.logger.warn({
      msg: 'Solana WebSocket lost; polling until it is back',
      endpoint: endpointLabel(params.urls[urlIndex]!, urlIndex),
      error: String((error as Error)?.message ?? error).split('\n')[0],
    });
    urlIndex = (urlIndex + 1) % params.urls.length;
    void connect(backoffDelay(failures, RECONNECT_BACKOFF));
  }

  async function connect(delayMs: number) {
    generation?.abort();
    const current = new AbortController();
    generation = current;
    const signal = AbortSignal.any([current.signal, stopped.signal]);
    if (delayMs > 0) await sleep(delayMs, signal);
    if (signal.aborted) return;
    const subscriptions = createSolanaRpcSubscriptions(params.urls[urlIndex]!);
    try {
      const slots = await subscriptions.slotNotifications().subscribe({ abortSignal: signal });
      for (const account of accounts) await subscribeAccount(subscriptions, account, signal);
      connected = true;
      failures = 0;
      params.onConnectionChange?.(true);
      void (async () => {
        try {
          for await (const notification of slots) params.onSlot(BigInt(notification.slot));
        } catch (error) {
          if (!signal.aborted) reconnect(error);
        }
      })();
      current.signal.addEventListener('abort', () => (connected = false), { once: true });
      pendingSubscriptions = (account) => subscribeAccount(subscriptions, account, signal).catch((error) => reconnect(error));
    } catch (error) {
      if (!signal.aborted && generation === current) reconnect(error);
    }
  }

  let pendingSubscriptions: ((account: string) => Promise<void>) | undefined;
  if (params.urls.length > 0) void connect(0);

  return {
    watch(list) {
      for (const account of list) {
        if (accounts.has(account)) continue;
        accounts.add(account);
        if (connected && pendingSubscriptions) void pendingSubscriptions(account);
      }
    },
    get connected() {
      return connected;
    },
    stop() {
      stopped.abort();
      generation?.abort();
    },
  };
}
