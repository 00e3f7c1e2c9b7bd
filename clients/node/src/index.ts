/**
 * @svc/gateway: the Node.js client of svc gateway. Typed calls for every route of the merchant
 * API (generated from its OpenAPI document), retries with idempotency keys, typed errors,
 * auto-pagination, and the webhook verifier. No runtime dependencies.
 */
export { createGatewayClient, type GatewayClient } from './client.ts';
export { IN_FLIGHT_MESSAGE, isRetryable, parseRetryAfter, type ApiRequest, type ClientOptions, type RequestOptions, type RetryEvent } from './http.ts';
export { PagePromise, type List, type Page } from './pagination.ts';
export {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  GatewayError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  UnprocessableEntityError,
} from './errors.ts';
export {
  computeSignature,
  constructWebhookEvent,
  createMemoryNonceCache,
  DEFAULT_TOLERANCE_SECONDS,
  MAX_SIGNATURES,
  verifyWebhook,
  WEBHOOK_HEADERS,
  WebhookVerificationError,
  type EndpointDisabledData,
  type EndpointDisabledEvent,
  type HeaderBag,
  type NonceCache,
  type PaymentEvent,
  type PaymentEventData,
  type RefundEvent,
  type SyncNonceCache,
  type VerifyOptions,
  type WebhookEvent,
  type WebhookVerificationReason,
} from './webhooks.ts';
export { DEFAULT_BASE_URL, type Resources } from './generated/resources.ts';
export * from './generated/types.ts';
export { VERSION } from './version.ts';
