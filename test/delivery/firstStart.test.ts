import { afterAll, beforeAll, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { box, buildApi } from '../helpers/api.ts';
import { bootstrapFirstMerchant } from '../../src/bootstrap.ts';
import { listenForWebhooks } from '../../src/cli/commands/webhooksListen.ts';
import { verifyWebhook } from '../../src/index.ts';
import { confirmSession, createFakeClock, delivery, insertSession } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

// The README's quick start with per-mode secrets: the first start prints a test key and the
// sandbox secret; `svc webhooks listen` with that key verifies sandbox deliveries.
const db = useTestDatabase('delivery_first_start');
let app: FastifyInstance;
let apiUrl: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  app = buildApi(db.store);
  apiUrl = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  receiver = await startReceiver();
});
afterAll(async () => {
  await app.close();
  await receiver.close();
});

test('the first-start secret signs sandbox session deliveries (not live ones), and svc webhooks listen with the first-start key verifies sandbox events', async () => {
  const first = (await bootstrapFirstMerchant(db.store, box))!;
  expect(first.sandboxWebhookSecret).toMatch(/^whsec_/);
  const clock = createFakeClock();
  const deliver = async (livemode: boolean) => {
    const sessionId = await insertSession(db.store, { merchantId: first.merchantId, livemode, webhookUrl: `${receiver.url}/session` });
    const event = await confirmSession(db.store, { merchantId: first.merchantId, sessionId, livemode });
    await delivery(db.store, { box, clock }).drain();
    return { event, got: receiver.received.find((r) => r.headers['x-service-event-id'] === event.id) };
  };
  const sandbox = await deliver(false);
  await expect(verifyWebhook(sandbox.got!.rawBody, sandbox.got!.headers, first.sandboxWebhookSecret, { now: clock.now(), livemode: false })).resolves.toEqual(
    sandbox.event,
  );
  const live = await deliver(true);
  await expect(verifyWebhook(live.got!.rawBody, live.got!.headers, first.sandboxWebhookSecret, { now: clock.now() })).rejects.toThrow(
    'signature does not match',
  );

  const lines: { line: string; data: Record<string, unknown> }[] = [];
  let stop!: () => void;
  const listening = listenForWebhooks({
    apiUrl,
    apiKey: first.testKey,
    port: 0,
    print: (line, data) => lines.push({ line, data }),
    stop: new Promise<void>((resolve) => (stop = resolve)),
  });
  try {
    await expect.poll(() => lines.some((entry) => 'listening' in entry.data), { timeout: 5_000 }).toBe(true);
    expect(lines[0]!.data).toMatchObject({ livemode: false });
    const heard = await deliver(false);
    await expect
      .poll(() => lines.find((entry) => (entry.data.event as { id?: string } | undefined)?.id === heard.event.id), { timeout: 5_000 })
      .toMatchObject({
        line: expect.stringContaining('signature verified'),
        data: { verified: true },
      });
  } finally {
    stop();
    await listening;
  }
});
