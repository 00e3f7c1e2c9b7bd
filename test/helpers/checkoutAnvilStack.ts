import { expect } from 'vitest';
import type { ChainName } from '../../src/internal/config.ts';
import { loadConfig } from '../../src/internal/config.ts';
import type { useTestDatabase } from './db.ts';
import { startAnvil, type Anvil } from './anvil.ts';
import { launchChromium, startCheckoutServer } from './browser.ts';
import { startLivePipeline, startVerifyingReceiver } from './livePipeline.ts';

/**
 * The stack of the browser tests that pay a customer's choice on anvil, nothing simulated: anvil
 * as `chain` with its real token contracts (`prepare` then sets feeds or the like), Chromium, the
 * checkout and dashboard server, the live pipeline (ingester, engine) and a verifying webhook
 * receiver. The caller makes its merchant, then `deliverTo(key)` registers the receiver with that
 * key's merchant and starts delivery. `close` stops everything.
 */
export async function startCheckoutAnvilStack(params: {
  db: ReturnType<typeof useTestDatabase>;
  chain: Exclude<ChainName, 'solana'>;
  prepare?: (anvil: Anvil) => Promise<void>;
}) {
  // Started together; if any part fails to start, the parts that did are stopped (an anvil left
  // running by a Chromium that failed to launch outlived the test run).
  const started = await Promise.allSettled([startAnvil({ chain: params.chain }), launchChromium(), startVerifyingReceiver()]);
  const stopStarted = () =>
    Promise.allSettled([
      started[0].status === 'fulfilled' ? started[0].value.stop() : undefined,
      started[1].status === 'fulfilled' ? started[1].value.close() : undefined,
      started[2].status === 'fulfilled' ? started[2].value.close() : undefined,
    ]);
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await stopStarted();
    throw failed.reason;
  }
  const [anvil, browser, receiver] = started.map((result) => (result as PromiseFulfilledResult<unknown>).value) as [
    Anvil,
    Awaited<ReturnType<typeof launchChromium>>,
    Awaited<ReturnType<typeof startVerifyingReceiver>>,
  ];
  const env = { [`SVC_${params.chain.toUpperCase()}_RPC_URL`]: anvil.rpcUrl, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' };
  let server: Awaited<ReturnType<typeof startCheckoutServer>>;
  try {
    await anvil.installChainTokens();
    await params.prepare?.(anvil);
    server = await startCheckoutServer(params.db.store, env);
  } catch (error) {
    await stopStarted();
    throw error;
  }
  const pipeline = startLivePipeline({
    store: params.db.store,
    connectionString: params.db.connectionString,
    config: loadConfig({ ...env, LOG_LEVEL: 'silent' }),
  });

  /** The merchant API over HTTP with `key`: status and JSON body. */
  async function api(key: string, method: string, path: string, body?: unknown) {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  return {
    anvil,
    browser,
    receiver,
    server,
    pipeline,
    api,
    /** Registers the receiver as a webhook of `key`'s merchant and starts delivering on the chain. */
    async deliverTo(key: string) {
      const registered = await api(key, 'POST', '/api/v1/webhooks', { url: receiver.url });
      expect(registered.status).toBe(201);
      receiver.useSecret(registered.body.secret);
      await pipeline.startDelivery({ chain: params.chain, webhookAllowPrivate: true });
    },
    async close() {
      await pipeline.close();
      await browser.close();
      await server.app.close();
      await receiver.close();
      await anvil.stop();
    },
  };
}
