import { randomBytes } from 'node:crypto';
import type { Store } from '../../src/store/index.ts';
import { createMerchant } from '../../src/accounts/index.ts';
import { appendEvent, type EventEnvelope } from '../../src/payments/outbox.ts';
import { createSecretBox, newId } from '../../src/internal/crypto.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createDelivery, type Clock, type DeliveryParams } from '../../src/delivery/index.ts';
import { afterAll, beforeAll } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { box as apiBox, createClient, GENEROUS_LIMITS } from './api.ts';
import { createOpenApiChecker } from './openapiCheck.ts';
import { startReceiver } from './webhookReceiver.ts';

export const box = createSecretBox(randomBytes(32));
export const logger = createLogger({ level: (process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent' });

/** A clock the test moves by hand: retries fall due without sleeping. */
export function createFakeClock(start = new Date()): Clock & { advance(ms: number): void; set(date: Date): void } {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(ms) {
      now += ms;
    },
    set(date) {
      now = date.getTime();
    },
  };
}

export async function merchant(store: Store, name = 'Hooks Ltd') {
  return createMerchant(store, box, { name });
}

/** A payment session row as the engine would have made it, with an optional webhookUrl. */
export async function insertSession(store: Store, params: { merchantId: string; livemode?: boolean; webhookUrl?: string | null }): Promise<string> {
  const id = newId('ses');
  await store.query(
    `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
                                   required_confirmations, webhook_url, expires_at, monitor_until)
     VALUES ($1, $2, $3, 'polygon', 'USDC', 6, 25000000, 25000000, 250000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'],
             '0x000000000000000000000000000000000000dEaD', 12, $4, now() + interval '1 hour', now() + interval '1 day')`,
    [id, params.merchantId, params.livemode ?? false, params.webhookUrl ?? null],
  );
  return id;
}

/** The state change and its event in one transaction, as the engine does it. */
export async function confirmSession(
  store: Store,
  params: { merchantId: string; sessionId: string; livemode?: boolean; type?: string },
): Promise<EventEnvelope> {
  return store.transaction(async (sql) => {
    await sql.query(`UPDATE payment_sessions SET status = 'confirmed', confirmed_at = now(), tx_hash = '0xabc' WHERE id = $1`, [params.sessionId]);
    return appendEvent(sql, {
      merchantId: params.merchantId,
      livemode: params.livemode ?? false,
      type: params.type ?? 'payment.confirmed',
      sessionId: params.sessionId,
      data: {
        id: params.sessionId,
        amount: '25.00',
        currency: 'USDC',
        chain: 'polygon',
        status: 'confirmed',
        txHash: '0xabc',
        confirmedAt: new Date().toISOString(),
      },
    });
  });
}

export function delivery(store: Store, overrides: Partial<DeliveryParams> = {}) {
  return createDelivery({
    store,
    logger,
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config: { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true },
    box,
    random: () => 0.5, // no jitter: delays are exactly the schedule's
    ...overrides,
  });
}

/**
 * The HTTP API of the webhook tests with a webhook receiver, for one file: `call` (answers
 * checked against the OpenAPI document) on an API that allows private webhook URLs (the
 * receiver listens on loopback), `strictCall` on one that refuses them. `started()` gives the
 * parts made in `beforeAll`.
 */
export function useWebhookApis(db: { store: Store }) {
  const build = (allowPrivate: boolean): FastifyInstance =>
    createHttp({
      store: db.store,
      logger,
      metrics: createMetricsRegistry({ defaultMetrics: false }),
      config: loadConfig({ SVC_WEBHOOK_ALLOW_PRIVATE: String(allowPrivate), LOG_LEVEL: 'silent' }),
      box: apiBox,
      rateLimits: GENEROUS_LIMITS,
    });
  let app: FastifyInstance;
  let strictApp: FastifyInstance;
  let call: ReturnType<typeof createClient>;
  let strictCall: ReturnType<typeof createClient>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    app = build(true);
    strictApp = build(false);
    call = createClient(app, await createOpenApiChecker(app));
    strictCall = createClient(strictApp);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await Promise.all([app.close(), strictApp.close(), receiver.close()]);
  });
  return {
    call: ((...args) => call(...args)) as ReturnType<typeof createClient>,
    strictCall: ((...args) => strictCall(...args)) as ReturnType<typeof createClient>,
    started: () => ({ app, receiver }),
  };
}

/** Appends a sandbox event of `type` to the outbox, as the engine would. */
export function emitEvent(store: Store, merchantId: string, type = 'payment.confirmed', sessionId?: string) {
  return store.transaction((sql) =>
    appendEvent(sql, { merchantId, livemode: false, type, sessionId: sessionId ?? null, data: { id: sessionId ?? 'ses_none', status: 'confirmed' } }),
  );
}
