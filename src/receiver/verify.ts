import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The receiver side of spec §6.3: what a merchant's backend runs on each delivery (exported from
 * the package as `verifyWebhook`); the sending side is `src/delivery/`. It depends on nothing but
 * `node:crypto`, so it can be copied into a receiver as it is.
 */

/** Header names of spec §6.3 (lower case, as Node delivers them), plus the stable event id. */
export const WEBHOOK_HEADERS = {
  signature: 'x-service-signature',
  timestamp: 'x-service-timestamp',
  nonce: 'x-service-nonce',
  eventId: 'x-service-event-id',
} as const;

/** Spec §8: a delivery whose timestamp is further than this from now is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch'
  | 'nonce_reused'
  | 'malformed_body'
  | 'livemode_mismatch';

/** Why a delivery was refused; `reason` is stable, the message is for people. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * Remembers nonces already accepted, for at least the timestamp tolerance: a captured delivery
 * replayed within the window is refused. `checkAndRemember` returns false for a nonce seen before.
 */
export interface NonceCache {
  checkAndRemember(nonce: string, nowSeconds: number): boolean | Promise<boolean>;
}

/**
 * An in-process nonce cache. Entries live `ttlSeconds` (default twice the tolerance, so a nonce
 * cannot expire while its timestamp is still acceptable). Receivers running several processes
 * should implement NonceCache on shared storage (Redis `SET NX EX`, a unique database column).
 */
export function createMemoryNonceCache(params: { ttlSeconds?: number } = {}): NonceCache {
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
  /** Seconds of clock difference accepted either way; default 300 (spec §8). */
  toleranceSeconds?: number;
  /** The current time (tests, or a receiver with its own clock); default `Date.now()`. */
  now?: Date | number;
  /** When given, a nonce seen before is refused. */
  nonceCache?: NonceCache;
  /**
   * When given, an event of the other mode is refused (`livemode_mismatch`): a live receiver
   * passes `true` and never acts on a sandbox event, whoever signed it. The mode is the
   * envelope's `livemode` field, which the signature covers.
   */
  livemode?: boolean;
}

/**
 * Most signatures one X-Service-Signature may carry. The gateway sends one, or two during a
 * secret rotation's overlap; a few more leave room, and the bound keeps a hostile header cheap.
 */
const MAX_SIGNATURES = 8;

/** The envelope of spec §6.2 as this service sends it. */
export interface WebhookEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
  timestamp: string;
  livemode: boolean;
}

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value[0] : value;
}

/** `sha256=` + hex HMAC-SHA256 of `timestamp.nonce.body` under `secret` (spec §6.3 rule 1). */
export function computeSignature(secret: string, timestamp: string | number, nonce: string, rawBody: string | Uint8Array): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`${timestamp}.${nonce}.`);
  hmac.update(rawBody);
  return `sha256=${hmac.digest('hex')}`;
}

/**
 * The signatures of an X-Service-Signature value: `sha256=<64 hex>`, or several of them
 * comma-separated (newest secret first) while a rotated secret still signs; undefined when the
 * value is not of that form.
 */
function parseSignatureHeader(value: string): string[] | undefined {
  const parts = value.split(',').map((part) => part.trim());
  if (parts.length > MAX_SIGNATURES || !parts.every((part) => /^sha256=[0-9a-f]{64}$/.test(part))) return undefined;
  return parts;
}

/**
 * Verifies one delivery by the rules of spec §6.3 and returns the parsed event:
 * all three headers present, timestamp within `toleranceSeconds` of now, signature compared in
 * constant time over the raw body exactly as received, and (with a `nonceCache`) a nonce never
 * accepted before. X-Service-Signature may carry several comma-separated signatures (one per
 * secret during a rotation): the delivery verifies when any one matches `secret`; every one is
 * compared, each in constant time. With `livemode`, an event of the other mode is refused.
 * Pass the raw body (Buffer or string), never a re-serialised object.
 * @throws {WebhookVerificationError} saying which rule failed.
 */
export async function verifyWebhook(rawBody: string | Uint8Array, headers: HeaderBag, secret: string, options: VerifyOptions = {}): Promise<WebhookEvent> {
  const signature = header(headers, WEBHOOK_HEADERS.signature);
  const timestamp = header(headers, WEBHOOK_HEADERS.timestamp);
  const nonce = header(headers, WEBHOOK_HEADERS.nonce);
  for (const [name, value] of [
    [WEBHOOK_HEADERS.signature, signature],
    [WEBHOOK_HEADERS.timestamp, timestamp],
    [WEBHOOK_HEADERS.nonce, nonce],
  ] as const) {
    if (!value) throw new WebhookVerificationError('missing_header', `missing ${name} header`);
  }
  if (!/^\d{1,12}$/.test(timestamp!)) throw new WebhookVerificationError('malformed_header', 'X-Service-Timestamp is not unix seconds');
  const signatures = parseSignatureHeader(signature!);
  if (!signatures) {
    throw new WebhookVerificationError('malformed_header', `X-Service-Signature is not sha256=<64 hex digits> (at most ${MAX_SIGNATURES}, comma-separated)`);
  }

  const nowMs = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
  const nowSeconds = Math.floor(nowMs / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `timestamp is more than ${tolerance} seconds from now`);
  }

  const expected = Buffer.from(computeSignature(secret, timestamp!, nonce!, rawBody));
  // No early exit: the time taken does not tell which of the signatures matched.
  let matched = false;
  for (const given of signatures) {
    if (timingSafeEqual(expected, Buffer.from(given))) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('signature_mismatch', 'signature does not match');
  let event: WebhookEvent;
  try {
    event = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8')) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('malformed_body', 'body is not JSON');
  }
  if (options.livemode !== undefined && event?.livemode !== options.livemode) {
    const mode = (live: unknown) => (live === true ? 'live' : live === false ? 'sandbox' : 'unknown-mode');
    throw new WebhookVerificationError('livemode_mismatch', `a ${mode(event?.livemode)} event, but this receiver takes ${mode(options.livemode)} events only`);
  }
  // Only a delivery that passed every other check may occupy a nonce, so forged (or refused)
  // requests cannot burn real ones.
  if (options.nonceCache && !(await options.nonceCache.checkAndRemember(nonce!, nowSeconds))) {
    throw new WebhookVerificationError('nonce_reused', 'nonce was already used');
  }
  return event;
}
