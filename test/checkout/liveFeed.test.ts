import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, WALLET } from '../helpers/api.ts';
import { makeSession, setSessionState } from '../helpers/checkoutSessions.ts';
import { startCheckoutServer } from '../helpers/browser.ts';

const db = useTestDatabase('checkout_feed');
let server: { app: FastifyInstance; url: string };
let merchantId: string;

beforeAll(async () => {
  server = await startCheckoutServer(db.store);
  merchantId = (await newMerchant(db.store, 'Feed Shop')).id;
});
afterAll(async () => {
  await server?.app.close();
});

/** Reads server-sent events from a real HTTP response, one parsed `status` event at a time. */
function eventReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return {
    async next(): Promise<Record<string, any> | 'end'> {
      for (;;) {
        const boundary = buffer.indexOf('\n\n');
        if (boundary >= 0) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (block.includes('event: status') && data) return JSON.parse(data.slice(6));
          continue;
        }
        const { value, done } = await reader.read();
        if (done) return 'end';
        buffer += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => reader.cancel(),
  };
}

test('the events feed sends the status at once, again on each change, and ends once the payment is final', async () => {
  const session = await makeSession(db.store, { merchantId, chain: 'polygon', merchantWallet: WALLET, amount: '11' });
  const response = await fetch(`${server.url}/checkout/${session.id}/events`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  expect(response.headers.get('cache-control')).toBe('no-store');
  const events = eventReader(response.body!);
  expect(await events.next()).toMatchObject({ object: 'payment_status', id: session.id, view: 'awaiting', confirmations: 0 });

  await setSessionState(db.store, session.id, { status: 'confirming', amountReceived: 11_000_000n, confirmations: 3 });
  expect(await events.next()).toMatchObject({ view: 'detected', confirmations: 3, amountRemaining: '0', payable: false });
  await setSessionState(db.store, session.id, { confirmations: 4 });
  expect(await events.next()).toMatchObject({ view: 'detected', confirmations: 4 });
  await setSessionState(db.store, session.id, { status: 'confirmed', confirmations: 32 });
  expect(await events.next()).toMatchObject({ view: 'paid', status: 'confirmed', refundUrl: expect.stringContaining('/refund') });
  expect(await events.next()).toBe('end');
});

test('an unknown session gets a 404 {"error"}, not a stream', async () => {
  const response = await fetch(`${server.url}/checkout/ses_AAAAAAAAAAAAAAAAAAAA/events`);
  expect(response.status).toBe(404);
  expect(await response.json()).toEqual({ error: 'no checkout session ses_AAAAAAAAAAAAAAAAAAAA' });
});

test('closing the server ends open feeds instead of waiting for them', async () => {
  const own = await startCheckoutServer(db.store);
  const session = await makeSession(db.store, { merchantId, chain: 'polygon', merchantWallet: WALLET, amount: '12' });
  const response = await fetch(`${own.url}/checkout/${session.id}/events`);
  const events = eventReader(response.body!);
  expect(await events.next()).toMatchObject({ view: 'awaiting' });
  const started = Date.now();
  await own.app.close();
  // The feed polls every second; a close that waited for the stream would take until FEED_MAX_MS.
  expect(Date.now() - started).toBeLessThan(3_000);
  expect(await events.next()).toBe('end');
});

describe('createBatchedReader()', () => {
  test('reads made in one turn of the event loop are answered by one query, each with its own value', async () => {
    const { createBatchedReader } = await import('../../src/checkout/liveFeed.ts');
    const calls: string[][] = [];
    const read = createBatchedReader(async (ids: string[]) => {
      calls.push(ids);
      return new Map(ids.filter((id) => id !== 'ses_missing').map((id) => [id, `value of ${id}`]));
    });
    const answers = await Promise.all(['ses_a', 'ses_b', 'ses_a', 'ses_missing'].map((id) => read(id)));
    expect(answers).toEqual(['value of ses_a', 'value of ses_b', 'value of ses_a', undefined]);
    expect(calls).toEqual([['ses_a', 'ses_b', 'ses_missing']]);
    // A later turn is a new batch; a failing load rejects every read of its batch.
    expect(await read('ses_c')).toBe('value of ses_c');
    expect(calls).toHaveLength(2);
    const failing = createBatchedReader(async () => {
      throw new Error('database down');
    });
    await expect(Promise.all([failing('ses_x'), failing('ses_y')])).rejects.toThrow('database down');
  });
});
