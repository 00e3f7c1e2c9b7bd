import { computeSignature, WEBHOOK_HEADERS } from '../webhooks/verify.ts';
import { randomBase62 } from '../internal/crypto.ts';

/** Sent with every delivery so receivers can tell our requests apart in their logs. */
export const USER_AGENT = 'svc-gateway-webhooks/1';

/**
 * The headers of one attempt (spec §6.3): a fresh timestamp and nonce every time, so a receiver
 * with a nonce cache accepts each retry, plus the event id and kind that stay the same on every
 * attempt and redelivery (receivers dedupe on the id).
 */
export function signedHeaders(params: { secret: string; body: string; eventId: string; eventType: string; deliveryId: string; now: Date; nonce?: string }): Record<string, string> {
  const timestamp = Math.floor(params.now.getTime() / 1000);
  const nonce = params.nonce ?? randomBase62(24);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    [WEBHOOK_HEADERS.signature]: computeSignature(params.secret, timestamp, nonce, params.body),
    [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    [WEBHOOK_HEADERS.nonce]: nonce,
    [WEBHOOK_HEADERS.eventId]: params.eventId,
    'x-service-event': params.eventType,
    'x-service-delivery-id': params.deliveryId,
  };
}
