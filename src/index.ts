/**
 * The package's public entry: what a merchant's backend imports. The daemon itself starts from
 * `bin/svc.js`; nothing here starts anything.
 */
export {
  verifyWebhook,
  computeSignature,
  createMemoryNonceCache,
  WebhookVerificationError,
  WEBHOOK_HEADERS,
  DEFAULT_TOLERANCE_SECONDS,
} from './receiver/verify.ts';
export type { NonceCache, VerifyOptions, WebhookEvent, WebhookVerificationReason, HeaderBag } from './receiver/verify.ts';
