import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { computeSignature, createMemoryNonceCache, verifyWebhook, WebhookVerificationError } from '../../src/index.ts';
import { signedHeaders } from '../../src/delivery/sign.ts';

const secret = 'whsec_TestSecretTestSecretTestSecret12';
const body = JSON.stringify({
  id: 'evt_1',
  event: 'payment.confirmed',
  data: { id: 'ses_1', amount: '25.00' },
  timestamp: '2026-11-21T12:00:00.000Z',
  livemode: false,
});
const now = new Date('2026-11-21T12:00:00Z');

function headers(overrides: Record<string, string | undefined> = {}, at = now) {
  const signed = signedHeaders({ secrets: [secret], body, eventId: 'evt_1', eventType: 'payment.confirmed', deliveryId: 'whd_1', now: at });
  return Object.fromEntries(Object.entries({ ...signed, ...overrides }).filter(([, v]) => v !== undefined)) as Record<string, string>;
}

async function reason(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).reason;
  }
}

describe('verifyWebhook()', () => {
  test('accepts a signed delivery and returns the envelope; the signature is an independent HMAC of "timestamp.nonce.body"', async () => {
    const h = headers();
    const independent = `sha256=${createHmac('sha256', secret).update(`${h['x-service-timestamp']}.${h['x-service-nonce']}.${body}`).digest('hex')}`;
    expect(h['x-service-signature']).toBe(independent);
    expect(h['x-service-timestamp']).toBe(String(now.getTime() / 1000));
    const event = await verifyWebhook(body, h, secret, { now });
    expect(event.id).toBe('evt_1');
    expect(event.event).toBe('payment.confirmed');
    // Buffer bodies, Headers objects and mixed-case header names work the same.
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    await expect(verifyWebhook(Buffer.from(body), upper, secret, { now })).resolves.toMatchObject({ id: 'evt_1' });
    await expect(verifyWebhook(body, new Headers(h), secret, { now })).resolves.toMatchObject({ id: 'evt_1' });
  });

  test('rejects a tampered body, a wrong secret and a tampered signature', async () => {
    const h = headers();
    expect(await reason(verifyWebhook(body.replace('25.00', '2500.00'), h, secret, { now }))).toBe('signature_mismatch');
    expect(await reason(verifyWebhook(body, h, `${secret}x`, { now }))).toBe('signature_mismatch');
    const flipped = h['x-service-signature']!.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
    expect(await reason(verifyWebhook(body, { ...h, 'x-service-signature': flipped }, secret, { now }))).toBe('signature_mismatch');
    // Re-signing with another nonce in the header but not the signature fails too.
    expect(await reason(verifyWebhook(body, { ...h, 'x-service-nonce': 'other' }, secret, { now }))).toBe('signature_mismatch');
  });

  test('rejects a timestamp more than 300 s away, either way, and accepts 300 s exactly', async () => {
    expect(await reason(verifyWebhook(body, headers({}, new Date(now.getTime() - 301_000)), secret, { now }))).toBe('timestamp_out_of_tolerance');
    expect(await reason(verifyWebhook(body, headers({}, new Date(now.getTime() + 301_000)), secret, { now }))).toBe('timestamp_out_of_tolerance');
    expect(await reason(verifyWebhook(body, headers({}, new Date(now.getTime() - 300_000)), secret, { now }))).toBe('accepted');
    expect(await reason(verifyWebhook(body, headers({}, new Date(now.getTime() - 3_600_000)), secret, { now, toleranceSeconds: 3600 }))).toBe('accepted');
  });

  test.each(['x-service-signature', 'x-service-timestamp', 'x-service-nonce'])('rejects a delivery without %s', async (name) => {
    await expect(verifyWebhook(body, headers({ [name]: undefined }), secret, { now })).rejects.toThrowError(`missing ${name} header`);
  });

  test('rejects malformed headers', async () => {
    expect(await reason(verifyWebhook(body, headers({ 'x-service-timestamp': '12.5' }), secret, { now }))).toBe('malformed_header');
    expect(await reason(verifyWebhook(body, headers({ 'x-service-signature': 'md5=abc' }), secret, { now }))).toBe('malformed_header');
  });

  test('with a nonce cache, a replayed delivery is rejected; a forged one does not burn the nonce', async () => {
    const cache = createMemoryNonceCache();
    const h = headers();
    expect(await reason(verifyWebhook(`${body} `, h, secret, { now, nonceCache: cache }))).toBe('signature_mismatch');
    expect(await reason(verifyWebhook(body, h, secret, { now, nonceCache: cache }))).toBe('accepted');
    expect(await reason(verifyWebhook(body, h, secret, { now, nonceCache: cache }))).toBe('nonce_reused');
    // A fresh attempt (new nonce) of the same event is accepted: dedupe on the event id, not the nonce.
    expect(await reason(verifyWebhook(body, headers(), secret, { now, nonceCache: cache }))).toBe('accepted');
  });

  test('a two-signature header (a rotation overlap) verifies with either secret, newest first, and is refused when none matches', async () => {
    const newer = 'whsec_NewerSecretNewerSecretNewerSec1';
    const signed = signedHeaders({ secrets: [newer, secret], body, eventId: 'evt_1', eventType: 'payment.confirmed', deliveryId: 'whd_1', now });
    const [first, second] = signed['x-service-signature']!.split(',');
    expect(first).toBe(computeSignature(newer, signed['x-service-timestamp']!, signed['x-service-nonce']!, body));
    expect(second).toBe(computeSignature(secret, signed['x-service-timestamp']!, signed['x-service-nonce']!, body));
    expect(await reason(verifyWebhook(body, signed, newer, { now }))).toBe('accepted');
    expect(await reason(verifyWebhook(body, signed, secret, { now }))).toBe('accepted');
    expect(await reason(verifyWebhook(body, signed, 'whsec_neither', { now }))).toBe('signature_mismatch');
    expect(await reason(verifyWebhook(`${body} `, signed, secret, { now }))).toBe('signature_mismatch');
    // A space after the comma is tolerated; a malformed part, or more than 8, is a malformed header.
    expect(await reason(verifyWebhook(body, { ...signed, 'x-service-signature': `${first}, ${second}` }, secret, { now }))).toBe('accepted');
    expect(await reason(verifyWebhook(body, { ...signed, 'x-service-signature': `${first},md5=abc` }, newer, { now }))).toBe('malformed_header');
    expect(await reason(verifyWebhook(body, { ...signed, 'x-service-signature': `${first},` }, newer, { now }))).toBe('malformed_header');
    expect(await reason(verifyWebhook(body, { ...signed, 'x-service-signature': Array(9).fill(first).join(',') }, newer, { now }))).toBe('malformed_header');
    expect(await reason(verifyWebhook(body, { ...signed, 'x-service-signature': Array(8).fill(first).join(',') }, newer, { now }))).toBe('accepted');
  });

  test('with { livemode: true } a sandbox event is refused even when correctly signed, and its nonce stays unused', async () => {
    const cache = createMemoryNonceCache();
    const h = headers();
    const refused = await verifyWebhook(body, h, secret, { now, livemode: true, nonceCache: cache }).catch((error: WebhookVerificationError) => error);
    expect(refused).toBeInstanceOf(WebhookVerificationError);
    expect((refused as WebhookVerificationError).reason).toBe('livemode_mismatch');
    expect((refused as WebhookVerificationError).message).toBe('a sandbox event, but this receiver takes live events only');
    expect(await reason(verifyWebhook(body, h, secret, { now, livemode: false, nonceCache: cache }))).toBe('accepted');
    // A live event passes a live receiver; a body without livemode passes neither.
    const live = body.replace('"livemode":false', '"livemode":true');
    const liveHeaders = signedHeaders({ secrets: [secret], body: live, eventId: 'evt_1', eventType: 'payment.confirmed', deliveryId: 'whd_1', now });
    expect(await reason(verifyWebhook(live, liveHeaders, secret, { now, livemode: true }))).toBe('accepted');
    expect(await reason(verifyWebhook(live, liveHeaders, secret, { now, livemode: false }))).toBe('livemode_mismatch');
    const modeless = JSON.stringify({ id: 'evt_1', event: 'payment.confirmed', data: {} });
    const modelessHeaders = signedHeaders({ secrets: [secret], body: modeless, eventId: 'evt_1', eventType: 'payment.confirmed', deliveryId: 'whd_1', now });
    expect(await reason(verifyWebhook(modeless, modelessHeaders, secret, { now, livemode: true }))).toBe('livemode_mismatch');
    expect(await reason(verifyWebhook(modeless, modelessHeaders, secret, { now }))).toBe('accepted');
  });

  test('computeSignature() matches the spec recipe byte for byte', () => {
    expect(computeSignature('k', 1700000000, 'n', 'b')).toBe(`sha256=${createHmac('sha256', 'k').update('1700000000.n.b').digest('hex')}`);
  });
});
