import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { box, useApi } from '../helpers/api.ts';
import { createApiKey, createMerchant } from '../../src/accounts/index.ts';
import { verifyWebhook } from '../../src/index.ts';
import { MAX_ROTATION_OVERLAP_SECONDS } from '../../src/delivery/index.ts';
import { confirmSession, createFakeClock, delivery, insertSession } from '../helpers/delivery.ts';
import { startReceiver, type Received } from '../helpers/webhookReceiver.ts';

// Webhook signing secrets per mode, their rotation with an overlap, and what the API shows of
// a signed request (issue 13).
const db = useTestDatabase('delivery_secrets');
const api = useApi(db, { env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  // /echo answers with the request's own headers, as some debugging receivers do.
  receiver = await startReceiver((request) => (request.path === '/echo' ? { status: 200, body: JSON.stringify(request.headers) } : { status: 200 }));
});
afterAll(() => receiver.close());

/** A merchant with its two secrets as created, and keys of both modes. */
async function account() {
  const { merchant, webhookSecrets } = await createMerchant(db.store, box, { name: 'Secrets Ltd' });
  const key = async (livemode: boolean, scopes?: ('read' | 'write')[]) =>
    (await createApiKey(db.store, { merchantId: merchant.id, livemode, ...(scopes ? { scopes } : {}) })).secret;
  return {
    id: merchant.id,
    secrets: webhookSecrets,
    test: await key(false),
    live: await key(true),
    readOnly: await key(false, ['read']),
    liveReadOnly: await key(true, ['read']),
  };
}

/** Confirms a new session of `livemode` with a webhookUrl on `path`, delivers at `clock`, returns what arrived. */
async function deliverSessionEvent(merchantId: string, livemode: boolean, path: string, clock: ReturnType<typeof createFakeClock>): Promise<Received> {
  const sessionId = await insertSession(db.store, { merchantId, livemode, webhookUrl: `${receiver.url}${path}` });
  const event = await confirmSession(db.store, { merchantId, sessionId, livemode });
  await delivery(db.store, { box, clock }).drain();
  return receiver.received.find((r) => r.headers['x-service-event-id'] === event.id)!;
}

const verdict = (got: Received, secret: string, clock: { now(): Date }, options: { livemode?: boolean } = {}) =>
  verifyWebhook(got.rawBody, got.headers, secret, { now: clock.now(), ...options }).then(
    () => 'verified',
    (error) => error.reason,
  );

describe('a secret per mode for session webhookUrls', () => {
  test('sandbox and live deliveries of one merchant are signed with different secrets: a sandbox delivery does not verify with the live secret', async () => {
    const a = await account();
    expect(a.secrets.sandbox).not.toBe(a.secrets.live);
    const clock = createFakeClock();
    const sandbox = await deliverSessionEvent(a.id, false, '/mode-sandbox', clock);
    const live = await deliverSessionEvent(a.id, true, '/mode-live', clock);
    expect(await verdict(sandbox, a.secrets.sandbox, clock)).toBe('verified');
    expect(await verdict(sandbox, a.secrets.live, clock)).toBe('signature_mismatch');
    expect(await verdict(live, a.secrets.live, clock, { livemode: true })).toBe('verified');
    expect(await verdict(live, a.secrets.sandbox, clock)).toBe('signature_mismatch');
    // A live receiver that also names its mode refuses the sandbox event whatever secret it holds.
    expect(await verdict(sandbox, a.secrets.sandbox, clock, { livemode: true })).toBe('livemode_mismatch');
  });
});

describe('rotating the merchant secret of a mode (API)', () => {
  test('during the overlap every delivery carries both signatures and either secret verifies; after it only the new one; expiresIn 0 stops the old at once', async () => {
    const a = await account();
    const clock = createFakeClock();
    const rotated = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.test, body: { expiresIn: 3600 } });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ livemode: false, secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{32}$/) });
    const expiresAt = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(Math.abs(expiresAt - (Date.now() + 3_600_000))).toBeLessThan(60_000);
    const state = await api.call('GET', '/api/v1/webhook-secret', { key: a.readOnly });
    expect(state.body).toEqual({
      livemode: false,
      createdAt: expect.any(String),
      rotatedAt: rotated.body.rotatedAt,
      previousSecretExpiresAt: rotated.body.previousSecretExpiresAt,
    });

    const during = await deliverSessionEvent(a.id, false, '/rotate-during', clock);
    expect(String(during.headers['x-service-signature']).split(',')).toHaveLength(2);
    expect(await verdict(during, rotated.body.secret, clock)).toBe('verified');
    expect(await verdict(during, a.secrets.sandbox, clock)).toBe('verified');
    // The live secret was not touched by a test key's rotation.
    const live = await deliverSessionEvent(a.id, true, '/rotate-live', clock);
    expect(String(live.headers['x-service-signature']).split(',')).toHaveLength(1);
    expect(await verdict(live, a.secrets.live, clock)).toBe('verified');

    clock.set(new Date(expiresAt + 1_000));
    const after = await deliverSessionEvent(a.id, false, '/rotate-after', clock);
    expect(String(after.headers['x-service-signature']).split(',')).toHaveLength(1);
    expect(await verdict(after, rotated.body.secret, clock)).toBe('verified');
    expect(await verdict(after, a.secrets.sandbox, clock)).toBe('signature_mismatch');

    const now = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.test, body: { expiresIn: 0 } });
    expect(now.body.previousSecretExpiresAt).toBeNull();
    const next = await deliverSessionEvent(a.id, false, '/rotate-now', clock);
    expect(await verdict(next, now.body.secret, clock)).toBe('verified');
    expect(await verdict(next, rotated.body.secret, clock)).toBe('signature_mismatch');
  });

  test('a test key rotates only the sandbox secret; the live one takes a live key with write scope; bad expiresIn is a 400 that changes nothing', async () => {
    const a = await account();
    expect((await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.readOnly })).status).toBe(403);
    expect((await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.liveReadOnly })).status).toBe(403);
    for (const expiresIn of [MAX_ROTATION_OVERLAP_SECONDS + 1, -1, 1.5, '60']) {
      const bad = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.live, body: { expiresIn } });
      expect(bad.status, JSON.stringify(expiresIn)).toBe(400);
      expect(bad.body.error).toMatch(/expiresIn/);
    }
    expect((await api.call('GET', '/api/v1/webhook-secret', { key: a.liveReadOnly })).body.rotatedAt).toBeNull();

    // No body: the default overlap, 24 h.
    const live = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.live });
    expect(live.body.livemode).toBe(true);
    expect(Math.abs(Date.parse(live.body.previousSecretExpiresAt) - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    expect((await api.call('GET', '/api/v1/webhook-secret', { key: a.test })).body.rotatedAt).toBeNull();
    const clock = createFakeClock();
    const delivered = await deliverSessionEvent(a.id, true, '/live-rotated', clock);
    expect(await verdict(delivered, live.body.secret, clock)).toBe('verified');
    expect(await verdict(delivered, a.secrets.live, clock)).toBe('verified');
    expect(await verdict(delivered, a.secrets.sandbox, clock)).toBe('signature_mismatch');

    // An idempotent retry answers the same rotation without the secret, which is stored nowhere in plaintext.
    const headers = { 'idempotency-key': `rotate-merchant-${Date.now()}` };
    const first = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.test, headers, body: { expiresIn: 0 } });
    const again = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.test, headers, body: { expiresIn: 0 } });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual({ livemode: false, createdAt: first.body.createdAt, rotatedAt: first.body.rotatedAt, previousSecretExpiresAt: null });
    const { rows } = await db.store.query<{ response_body: string }>('SELECT response_body FROM idempotency_keys WHERE merchant_id = $1', [a.id]);
    expect(rows.map((row) => row.response_body).join('\n')).not.toContain(first.body.secret);
  });
});

describe('rotating an endpoint secret (API)', () => {
  test('the old endpoint secret keeps verifying until previousSecretExpiresAt (default 24 h), then stops', async () => {
    const a = await account();
    const hook = await api.call('POST', '/api/v1/webhooks', { key: a.test, body: { url: `${receiver.url}/endpoint-rotation` } });
    const rotated = await api.call('POST', `/api/v1/webhooks/${hook.body.id}/rotate-secret`, { key: a.test });
    expect(rotated.status).toBe(200);
    const expiresAt = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(Math.abs(expiresAt - (Date.now() + 86_400_000))).toBeLessThan(60_000);
    const clock = createFakeClock();
    // A sandbox event goes to the session's URL and to the endpoint: take the endpoint's copy.
    const atEndpoint = async () => {
      const session = await deliverSessionEvent(a.id, false, '/endpoint-rotation-session', clock);
      return receiver.received.find((r) => r.path === '/endpoint-rotation' && r.headers['x-service-event-id'] === session.headers['x-service-event-id'])!;
    };
    const during = await atEndpoint();
    expect(await verdict(during, rotated.body.secret, clock)).toBe('verified');
    expect(await verdict(during, hook.body.secret, clock)).toBe('verified');
    clock.set(new Date(expiresAt + 1_000));
    const after = await atEndpoint();
    expect(await verdict(after, rotated.body.secret, clock)).toBe('verified');
    expect(await verdict(after, hook.body.secret, clock)).toBe('signature_mismatch');
    expect((await api.call('POST', `/api/v1/webhooks/${hook.body.id}/rotate-secret`, { key: a.test, body: { expiresIn: 86_401 } })).status).toBe(400);
  });
});

describe('what attempt logs show', () => {
  test("a read-only key's attempts read has no request headers or body; no key ever sees a signature, not even one echoed in a response", async () => {
    const a = await account();
    await api.call('POST', '/api/v1/webhooks', { key: a.test, body: { url: `${receiver.url}/echo` } });
    const clock = createFakeClock();
    const sent = await deliverSessionEvent(a.id, false, '/echo', clock);
    const signatures = String(sent.headers['x-service-signature']).split(',');
    const eventId = String(sent.headers['x-service-event-id']);
    // An attempt logged before migration 014 still holds its signature in the database.
    await db.store.query(
      `UPDATE webhook_attempts SET request_headers = request_headers || jsonb_build_object('x-service-signature', $2::text) WHERE event_id = $1`,
      [eventId, signatures[0]],
    );

    const readOnly = await api.call('GET', `/api/v1/events/${eventId}/attempts`, { key: a.readOnly });
    expect(readOnly.status).toBe(200);
    expect(readOnly.body.data).toHaveLength(2);
    for (const attempt of readOnly.body.data) {
      expect(Object.keys(attempt).sort()).toEqual([
        'attemptNumber',
        'deliveryId',
        'durationMs',
        'endpointId',
        'error',
        'id',
        'responseBodyExcerpt',
        'responseStatus',
        'signaturesSent',
        'startedAt',
        'succeeded',
        'url',
      ]);
      // How many signatures went (one secret signs here), never their values.
      expect(attempt.signaturesSent).toBe(signatures.length);
      expect(attempt.responseStatus).toBe(200);
      expect(attempt.responseBodyExcerpt).toContain('"x-service-signature":"sha256=[redacted]"');
    }
    const write = await api.call('GET', `/api/v1/events/${eventId}/attempts`, { key: a.test });
    for (const attempt of write.body.data) {
      expect(attempt.requestHeaders['x-service-event-id']).toBe(eventId);
      expect(attempt.requestHeaders).not.toHaveProperty('x-service-signature');
      expect(JSON.parse(attempt.requestBody).id).toBe(eventId);
    }
    for (const answer of [readOnly, write]) {
      const text = JSON.stringify(answer.body);
      expect(text).not.toMatch(/sha256=[0-9a-f]{64}/);
      for (const signature of signatures) expect(text).not.toContain(signature.slice(7));
    }
  });
});

describe('caps', () => {
  test('16 endpoints per mode: the 17th is a 409 that writes nothing, even when 20 arrive at once; the other mode has its own 16', async () => {
    const a = await account();
    const create = (key: string, n: number) => api.call('POST', '/api/v1/webhooks', { key, body: { url: `${receiver.url}/cap-${n}` } });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => create(a.test, n)));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(16);
    for (const refused of answers.filter((answer) => answer.status !== 201)) {
      expect(refused).toMatchObject({
        status: 409,
        body: { error: 'this account already has 16 sandbox webhook endpoints, the most allowed: delete one first' },
      });
    }
    expect((await api.call('GET', '/api/v1/webhooks', { key: a.test })).body.data).toHaveLength(16);
    expect((await create(a.live, 99)).status).toBe(201);
    const first = answers.find((answer) => answer.status === 201)!;
    await api.call('DELETE', `/api/v1/webhooks/${first.body.id}`, { key: a.test });
    expect((await create(a.test, 100)).status).toBe(201);
  });

  test('a replay of more than 1,000 events is a 400 that queues nothing; 1,000 are replayed', async () => {
    const a = await account();
    const hook = await api.call('POST', '/api/v1/webhooks', { key: a.test, body: { url: `${receiver.url}/replay-cap` } });
    await db.store.query(
      `INSERT INTO events (id, merchant_id, livemode, type, payload, created_at, dispatched_at, body)
       SELECT 'evt_cap' || n, $1, false, 'payment.confirmed', '{}'::jsonb, now() - interval '1 hour' + n * interval '1 second', now(), '{}'
         FROM generate_series(1, 1001) AS n`,
      [a.id],
    );
    const from = new Date(Date.now() - 2 * 3_600_000).toISOString();
    const tooMany = await api.call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: a.test, body: { from } });
    expect(tooMany).toMatchObject({ status: 400, body: { error: 'the window holds more than 1000 events: replay a narrower window' } });
    const count = async () =>
      (await db.store.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND origin = 'replay'", [hook.body.id]))
        .rows[0]!.n;
    expect(await count()).toBe(0);
    const { rows } = await db.store.query<{ created_at: Date }>("SELECT created_at FROM events WHERE id = 'evt_cap1001'");
    const replayed = await api.call('POST', `/api/v1/webhooks/${hook.body.id}/replay`, { key: a.test, body: { from, to: rows[0]!.created_at.toISOString() } });
    expect(replayed).toMatchObject({ status: 202, body: { replayed: 1000 } });
    expect(await count()).toBe(1000);
  });
});

describe('a worker opens each sealed secret once', () => {
  test('later deliveries reuse the opened secret, and a rotated secret signs at once', async () => {
    const a = await account();
    // Opens per sealed text (other tests' deliveries still queued may be drained here too).
    const opens = new Map<string, number>();
    const counting = {
      seal: (plain: string) => box.seal(plain),
      open: (sealed: string) => {
        opens.set(sealed, (opens.get(sealed) ?? 0) + 1);
        return box.open(sealed);
      },
    };
    const clock = createFakeClock();
    const worker = delivery(db.store, { box: counting, clock });
    const deliverWith = async (path: string) => {
      const sessionId = await insertSession(db.store, { merchantId: a.id, livemode: false, webhookUrl: `${receiver.url}${path}` });
      const event = await confirmSession(db.store, { merchantId: a.id, sessionId, livemode: false });
      await worker.drain();
      return receiver.received.find((r) => r.headers['x-service-event-id'] === event.id)!;
    };
    for (const n of [1, 2, 3]) expect(await verdict(await deliverWith(`/opened-${n}`), a.secrets.sandbox, clock)).toBe('verified');
    expect(Math.max(...opens.values())).toBe(1);
    const opened = opens.size;
    const rotated = await api.call('POST', '/api/v1/webhook-secret/rotate', { key: a.test, body: { expiresIn: 0 } });
    const after = await deliverWith('/opened-rotated');
    expect(await verdict(after, rotated.body.secret, clock)).toBe('verified');
    expect(await verdict(after, a.secrets.sandbox, clock)).toBe('signature_mismatch');
    expect(opens.size).toBe(opened + 1);
    expect(Math.max(...opens.values())).toBe(1);
  });
});
