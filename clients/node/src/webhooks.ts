import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Chain, Currency, Refund, SessionStatus, WebhookEventType } from './generated/types.ts';

/**
 * The receiver side of spec §6.3: verify a delivery and get its typed event. It follows the
 * gateway's own verifier rule for rule (clients/README.md, "The verifier contract"), and the
 * shared vectors in clients/webhook-vectors.json check that it does.
 */

/** Header names (lower case, as Node delivers them). */
export const WEBHOOK_HEADERS = {
  signature: 'x-service-signature',
  timestamp: 'x-service-timestamp',
  nonce: 'x-service-nonce',
  eventId: 'x-service-event-id',
} as const;

/** Spec §8: a delivery whose timestamp is further than this from now is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Most signatures one X-Service-Signature may carry (the gateway sends one, two while a rotated secret still signs). */
export const MAX_SIGNATURES = 8;

export type WebhookVerificationReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'malformed_body'
  | 'livemode_mismatch'
  | 'nonce_reused';

/** Why a delivery was refused; `reason` is stable (answer 400 and log it), the message is for people. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** `data` of `payment.*` events: the session's state when the event happened. Amounts are decimal text. */
export interface PaymentEventData {
  id: string;
  amount: string;
  currency: Currency;
  chain: Chain;
  status: SessionStatus;
  txHash: string | null;
  confirmedAt: string | null;
  amountDue: string;
  amountReceived: string;
  amountPending: string;
  fee: string;
  paymentAddress: string;
  confirmations: number;
  expiresAt: string;
  metadata: Record<string, string>;
  livemode: boolean;
  /** While confirmed plus pending money is short of `amountDue`. */
  amountRemaining?: string;
  /** While confirmed money exceeds `amountDue` (refundable). */
  amountExcess?: string;
  /** On `payment.failed`. */
  failureReason?: string;
}

/** `data` of `webhook_endpoint.disabled`, sent to the merchant's other endpoints. */
export interface EndpointDisabledData {
  id: string;
  url: string;
  status: 'disabled';
  reason: string;
  disabledAt: string;
}

interface Envelope<K extends WebhookEventType, D> {
  /** Stable across retries, redeliveries and replays: dedupe on it. */
  id: string;
  event: K;
  data: D;
  /** When the event happened (ISO 8601), not when it was sent. */
  timestamp: string;
  livemode: boolean;
}

export type PaymentEvent = Envelope<Extract<WebhookEventType, `payment.${string}`>, PaymentEventData>;
export type RefundEvent = Envelope<Extract<WebhookEventType, `refund.${string}`>, Refund>;
export type EndpointDisabledEvent = Envelope<'webhook_endpoint.disabled', EndpointDisabledData>;
/** The envelope of spec §6.2; narrow on `event` to get the `data` type. */
export type WebhookEvent = PaymentEvent | RefundEvent | EndpointDisabledEvent;

/**
 * Remembers accepted nonces for at least the tolerance, so a captured delivery replayed within
 * the window is refused. Returns false for a nonce seen before.
 */
export interface NonceCache {
  checkAndRemember(nonce: string, nowSeconds: number): boolean | Promise<boolean>;
}

/** An in-process NonceCache (entries live twice the tolerance). Several processes need shared storage (Redis SET NX EX). */
export function createMemoryNonceCache(params: { ttlSeconds?: number } = {}): NonceCache & SyncNonceCache {
  const ttl = params.ttlSeconds ?? 2 * DEFAULT_TOLERANCE_SECONDS;
  const seen = new Map<string, number>();
  return {
    checkAndRemember(nonce, nowSeconds) {
      for (const [key, expires] of seen) {
        if (expires > nowSeconds) break; // insertion order is expiry order
        seen.delete(key);
      }
      if (seen.has(nonce)) return false;
      seen.set(nonce, nowSeconds + ttl);
      return true;
    },
  };
}

export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Seconds of clock difference accepted either way; default 300. */
  toleranceSeconds?: number;
  /** The current time; default now. */
  now?: Date | number;
  /** With a cache, a nonce seen before is refused (`nonce_reused`). */
  nonceCache?: NonceCache;
  /**
   * The mode this receiver takes: `true` on a live receiver refuses sandbox events
   * (`livemode_mismatch`), whoever signed them. Set it: a test key can make the gateway sign
   * sandbox events with content of its choosing.
   */
  livemode?: boolean;
}

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value[0] : value;
}

/** `sha256=` + hex HMAC-SHA256 of `timestamp.nonce.rawBody` under `secret`. */
export function computeSignature(secret: string, timestamp: string | number, nonce: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${nonce}.`).update(rawBody).digest('hex')}`;
}

/**
 * Verifies one delivery and returns its event. The checks, in this order: the three headers
 * are present and non-empty; the timestamp is unix seconds and the signature header is one to
 * eight comma-separated `sha256=<64 lower-case hex>`; the timestamp is within the tolerance; one
 * of the signatures is the HMAC of the raw body under `secret` (every one compared, each in
 * constant time); the body is a JSON object; its `livemode` is the required mode; its nonce is new.
 * Pass the body exactly as received (Buffer or string), never a re-serialised object.
 * @throws {WebhookVerificationError} naming the rule that failed.
 */
export async function verifyWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, options: VerifyOptions = {}): Promise<WebhookEvent> {
  const { event, nonce, nowSeconds } = checkDelivery(rawBody, headers, secret, options);
  // Only a delivery that passed every other check may occupy a nonce: forged requests cannot burn real ones.
  if (options.nonceCache && !(await options.nonceCache.checkAndRemember(nonce, nowSeconds))) {
    throw new WebhookVerificationError('nonce_reused', 'nonce was already used');
  }
  return event;
}

/** A nonce cache that answers at once (createMemoryNonceCache's), for {@link constructWebhookEvent}. */
export interface SyncNonceCache {
  checkAndRemember(nonce: string, nowSeconds: number): boolean;
}

/**
 * {@link verifyWebhook}, synchronous, as Stripe's `constructEvent` is: returns the event or throws
 * {@link WebhookVerificationError}, so a handler cannot go on with a forged event because it forgot
 * an `await` (with the async verifier that is an unhandled rejection, not a refusal). The same
 * checks in the same order; the nonce cache, if given, must answer synchronously
 * (createMemoryNonceCache does; a shared store such as Redis needs {@link verifyWebhook}).
 * @throws {WebhookVerificationError} naming the rule that failed.
 */
export function constructWebhookEvent(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  options: Omit<VerifyOptions, 'nonceCache'> & { nonceCache?: SyncNonceCache } = {},
): WebhookEvent {
  const { event, nonce, nowSeconds } = checkDelivery(rawBody, headers, secret, options);
  if (options.nonceCache) {
    const fresh: unknown = options.nonceCache.checkAndRemember(nonce, nowSeconds);
    if (typeof fresh !== 'boolean') throw new TypeError('constructWebhookEvent needs a synchronous nonce cache; use verifyWebhook with an asynchronous one');
    if (!fresh) throw new WebhookVerificationError('nonce_reused', 'nonce was already used');
  }
  return event;
}

/** Every check but the nonce's, in the documented order; the event with what the nonce check needs. */
function checkDelivery(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  options: Pick<VerifyOptions, 'toleranceSeconds' | 'now' | 'livemode'>,
): { event: WebhookEvent; nonce: string; nowSeconds: number } {
  const signature = header(headers, WEBHOOK_HEADERS.signature);
  const timestamp = header(headers, WEBHOOK_HEADERS.timestamp);
  const nonce = header(headers, WEBHOOK_HEADERS.nonce);
  if (!signature) throw new WebhookVerificationError('missing_header', `missing ${WEBHOOK_HEADERS.signature} header`);
  if (!timestamp) throw new WebhookVerificationError('missing_header', `missing ${WEBHOOK_HEADERS.timestamp} header`);
  if (!nonce) throw new WebhookVerificationError('missing_header', `missing ${WEBHOOK_HEADERS.nonce} header`);
  if (!/^[0-9]{1,12}$/.test(timestamp)) throw new WebhookVerificationError('malformed_header', 'X-Service-Timestamp is not unix seconds');
  // Optional whitespace around each signature is HTTP's: spaces and tabs only.
  const signatures = signature.split(',').map((part) => part.replace(/^[ \t]+|[ \t]+$/g, ''));
  if (signatures.length > MAX_SIGNATURES || !signatures.every((part) => /^sha256=[0-9a-f]{64}$/.test(part))) {
    throw new WebhookVerificationError('malformed_header', `X-Service-Signature is not sha256=<64 hex digits> (at most ${MAX_SIGNATURES}, comma-separated)`);
  }

  const nowMs = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
  const nowSeconds = Math.floor(nowMs / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `timestamp is more than ${tolerance} seconds from now`);
  }

  const expected = Buffer.from(computeSignature(secret, timestamp, nonce, rawBody));
  let matched = false;
  for (const given of signatures) {
    // No early exit: the time taken does not tell which signature matched.
    if (timingSafeEqual(expected, Buffer.from(given))) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('signature_mismatch', 'signature does not match');

  let event: unknown;
  try {
    event = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'body is not JSON');
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) throw new WebhookVerificationError('malformed_body', 'body is not a JSON object');
  const livemode = (event as { livemode?: unknown }).livemode;
  if (options.livemode !== undefined && livemode !== options.livemode) {
    const mode = (live: unknown) => (live === true ? 'live' : live === false ? 'sandbox' : 'unknown-mode');
    throw new WebhookVerificationError('livemode_mismatch', `a ${mode(livemode)} event, but this receiver takes ${mode(options.livemode)} events only`);
  }
  return { event: event as WebhookEvent, nonce, nowSeconds };
}
