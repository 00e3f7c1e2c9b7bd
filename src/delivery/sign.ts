import { computeSignature, WEBHOOK_HEADERS } from '../receiver/verify.ts';
import { randomBase62 } from '../internal/crypto.ts';

/** Sent with every delivery so receivers can tell our requests apart in their logs. */
const USER_AGENT = 'svc-gateway-webhooks/1';

/**
 * The headers of one attempt (spec §6.3): a fresh timestamp and nonce every time, so a receiver
 * with a nonce cache accepts each retry, plus the event id and kind that stay the same on every
 * attempt and redelivery (receivers dedupe on the id).
 *
 * `secrets` are the target's signing secrets, newest first: one, or two during a rotation's
 * overlap. X-Service-Signature carries one `sha256=<hex>` per secret, comma-separated in that
 * order, so a receiver holding either secret verifies the delivery.
 */
export function signedHeaders(params: {
  secrets: readonly string[];
  body: string;
  eventId: string;
  eventType: string;
  deliveryId: string;
  now: Date;
  nonce?: string;
}): Record<string, string> {
  if (params.secrets.length === 0) throw new Error('a webhook needs at least one signing secret');
  const timestamp = Math.floor(params.now.getTime() / 1000);
  const nonce = params.nonce ?? randomBase62(24);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    [WEBHOOK_HEADERS.signature]: params.secrets.map((secret) => computeSignature(secret, timestamp, nonce, params.body)).join(','),
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.nonce]: nonce,
    [WEBHOOK_HEADERS.eventId]: params.eventId,
    'x-service-event': params.eventType,
    'x-service-delivery-id': params.deliveryId,
  };
}

/**
 * The headers as the attempt log keeps them: without the signature. With the timestamp, nonce
 * and body, a signature is a request anyone could replay for five minutes; the log has no use
 * for it, so it is never stored (and never shown by the API).
 */
export function loggedHeaders(headers: Record<string, string>): Record<string, string> {
  const { [WEBHOOK_HEADERS.signature]: _signature, ...rest } = headers;
  return rest;
}
