/**
 * The naming table: which client method each OpenAPI operation becomes, and the names of the
 * types it takes and returns. Everything else (fields, enums, docs, paths, paging) comes from
 * the document. The generator refuses an operation of `/api/v1` that this table does not name,
 * so a new route in the daemon fails the drift test until someone picks its client name here.
 *
 * Names are camelCase; each language's emitter converts them (Python: snake_case methods and
 * resources, Go and Rust: their own conventions). The order here is the order of the generated
 * files and decides which name a shared shape gets first (Payment's `tokens` reuse `Token`).
 */
export interface OperationName {
  /** The resource object on the client: `client.payments`. */
  resource: string;
  /** The method on it: `client.payments.list`. */
  method: string;
  /** The returned object's type; for a list, the type of one item. */
  returns: string;
  /** The request body's type, when the operation takes one. */
  body?: string;
  /** The query parameters' type, when the operation takes any. */
  query?: string;
}

/** operationId (src/api/openapi.ts `operationIdOf`) -> client name. */
export const OPERATIONS: Record<string, OperationName> = {
  getHealth: { resource: 'health', method: 'check', returns: 'Health' },

  postSessions: { resource: 'sessions', method: 'create', body: 'SessionCreateParams', returns: 'Session' },
  getSessionsBySessionId: { resource: 'sessions', method: 'retrieve', returns: 'Session' },

  getPaymentsById: { resource: 'payments', method: 'retrieve', returns: 'Payment' },
  postPayments: { resource: 'payments', method: 'create', body: 'PaymentCreateParams', returns: 'Payment' },
  getPayments: { resource: 'payments', method: 'list', query: 'PaymentListParams', returns: 'Payment' },

  postCheckoutSessions: { resource: 'checkoutSessions', method: 'create', body: 'CheckoutSessionCreateParams', returns: 'Payment' },
  getCheckoutSessionsById: { resource: 'checkoutSessions', method: 'retrieve', returns: 'Payment' },

  postPaymentLinks: { resource: 'paymentLinks', method: 'create', body: 'PaymentLinkCreateParams', returns: 'PaymentLink' },
  getPaymentLinks: { resource: 'paymentLinks', method: 'list', query: 'PaymentLinkListParams', returns: 'PaymentLink' },
  getPaymentLinksById: { resource: 'paymentLinks', method: 'retrieve', returns: 'PaymentLink' },
  patchPaymentLinksById: { resource: 'paymentLinks', method: 'update', body: 'PaymentLinkUpdateParams', returns: 'PaymentLink' },

  getCurrencies: { resource: 'currencies', method: 'list', query: 'CurrencyListParams', returns: 'CurrencyInfo' },
  getStatus: { resource: 'status', method: 'retrieve', returns: 'Status' },
  getFees: { resource: 'fees', method: 'retrieve', returns: 'FeeSummary' },

  postRefunds: { resource: 'refunds', method: 'create', body: 'RefundCreateParams', returns: 'Refund' },
  getRefunds: { resource: 'refunds', method: 'list', query: 'RefundListParams', returns: 'Refund' },
  getRefundsById: { resource: 'refunds', method: 'retrieve', returns: 'Refund' },
  postRefundsByIdComplete: { resource: 'refunds', method: 'complete', body: 'RefundCompleteParams', returns: 'Refund' },
  postRefundsByIdReject: { resource: 'refunds', method: 'reject', body: 'RefundRejectParams', returns: 'Refund' },

  getWallets: { resource: 'wallets', method: 'list', query: 'WalletListParams', returns: 'Wallet' },
  postWalletsChallenges: { resource: 'wallets', method: 'createChallenge', body: 'WalletChallengeCreateParams', returns: 'WalletChallenge' },
  postWallets: { resource: 'wallets', method: 'create', body: 'WalletCreateParams', returns: 'Wallet' },
  postWalletsByIdDefault: { resource: 'wallets', method: 'setDefault', returns: 'Wallet' },
  deleteWalletsById: { resource: 'wallets', method: 'delete', returns: 'Deleted' },

  getBrand: { resource: 'brand', method: 'retrieve', returns: 'Brand' },
  patchBrand: { resource: 'brand', method: 'update', body: 'BrandUpdateParams', returns: 'Brand' },
  postBrandLogo: { resource: 'brand', method: 'setLogo', body: 'BrandLogoParams', returns: 'Brand' },
  deleteBrandLogo: { resource: 'brand', method: 'deleteLogo', returns: 'Brand' },

  getTransfersUnmatched: { resource: 'transfers', method: 'listUnmatched', query: 'TransferListParams', returns: 'Transfer' },
  postTransfersByIdAttribution: { resource: 'transfers', method: 'attribute', body: 'TransferAttributeParams', returns: 'TransferAttribution' },

  postWebhooks: { resource: 'webhookEndpoints', method: 'create', body: 'WebhookEndpointCreateParams', returns: 'WebhookEndpointWithSecret' },
  getWebhooks: { resource: 'webhookEndpoints', method: 'list', returns: 'WebhookEndpoint' },
  getWebhooksById: { resource: 'webhookEndpoints', method: 'retrieve', returns: 'WebhookEndpoint' },
  patchWebhooksById: { resource: 'webhookEndpoints', method: 'update', body: 'WebhookEndpointUpdateParams', returns: 'WebhookEndpoint' },
  deleteWebhooksById: { resource: 'webhookEndpoints', method: 'delete', returns: 'Deleted' },
  postWebhooksByIdRotateSecret: { resource: 'webhookEndpoints', method: 'rotateSecret', body: 'SecretRotateParams', returns: 'WebhookEndpointRotated' },
  getWebhooksByIdDeliveries: { resource: 'webhookEndpoints', method: 'listDeliveries', query: 'DeliveryListParams', returns: 'WebhookDelivery' },
  postWebhooksByIdReplay: { resource: 'webhookEndpoints', method: 'replay', body: 'WebhookReplayParams', returns: 'WebhookReplay' },
  postWebhooksByIdTest: { resource: 'webhookEndpoints', method: 'sendTestEvent', returns: 'WebhookTestEvent' },

  getWebhookSecret: { resource: 'webhookSecret', method: 'retrieve', returns: 'WebhookSecret' },
  postWebhookSecretRotate: { resource: 'webhookSecret', method: 'rotate', body: 'SecretRotateParams', returns: 'WebhookSecretRotated' },

  getEvents: { resource: 'events', method: 'list', query: 'EventListParams', returns: 'Event' },
  getEventsById: { resource: 'events', method: 'retrieve', returns: 'Event' },
  getEventsByIdDeliveries: { resource: 'events', method: 'listDeliveries', returns: 'WebhookDelivery' },
  getEventsByIdAttempts: { resource: 'events', method: 'listAttempts', returns: 'WebhookAttempt' },
  postEventsByIdRedeliver: { resource: 'events', method: 'redeliver', body: 'EventRedeliverParams', returns: 'EventRedelivery' },

  postSandboxSessionsBySessionIdPay: { resource: 'sandbox', method: 'pay', body: 'SandboxPayParams', returns: 'SandboxPayment' },
  postSandboxSessionsBySessionIdSweep: { resource: 'sandbox', method: 'sweep', returns: 'SandboxSweep' },

  postX402Verify: { resource: 'x402', method: 'verify', body: 'X402VerifyParams', returns: 'X402Verification' },
  postX402Settle: { resource: 'x402', method: 'settle', body: 'X402SettleParams', returns: 'X402Settlement' },
  getX402Supported: { resource: 'x402', method: 'supported', returns: 'X402Supported' },
};

/**
 * Names for shapes nested inside a named type (`Type.field`; array items take the array's
 * field). Without an entry a nested object or enum is called `<Type><Field>`; a shape that
 * equals one already named (field docs aside) reuses that name.
 */
export const NESTED_NAMES: Record<string, string> = {
  'Session.tokens': 'Token',
  'CurrencyInfo.tokens': 'CurrencyToken',
  'CurrencyToken.variant': 'TokenVariant',
  'CurrencyInfo.confirmations': 'ConfirmationRule',
  'Status.api': 'ApiStatus',
  'Status.status': 'OverallStatus',
  'Status.chains': 'ChainStatus',
  'ChainStatus.status': 'ChainHealth',
  'WebhookEndpointWithSecret.status': 'WebhookEndpointStatus',
  'FeeSummary.data': 'FeeLine',
  'TransferAttribution.session': 'AttributedSession',
  'WebhookEndpointCreateParams.enabledEvents': 'EnabledEvent',
  'SandboxPayParams.outcome': 'SandboxOutcome',
  'Session.chain': 'Chain',
  'Session.currency': 'Currency',
};

/** Resources in the order the clients list them, with the one line that documents each. */
export const RESOURCES: Record<string, string> = {
  health: 'Liveness of the API and its database (no key needed).',
  sessions: 'Interface A: payment sessions (Bearer authentication in the spec; both headers work).',
  payments: 'Interface B: payments, the same sessions under Interface B names, with list paging.',
  checkoutSessions: 'Interface B: checkout sessions (a payment created for the hosted checkout page).',
  paymentLinks: 'Reusable payment links: each visit creates a session.',
  currencies: 'Currencies and chains this gateway accepts, with limits and confirmation rules.',
  status: 'Health of the API and of every chain listener, for this key\'s mode.',
  fees: 'The 1% fee, summed per chain and currency.',
  refunds: 'Refund requests: created by merchant or customer, completed or rejected by the merchant.',
  wallets: 'The merchant\'s receiving wallets, verified by a signed challenge.',
  brand: 'The merchant\'s brand shown to customers: display name, accent colour, support contacts, logo (live key to change).',
  transfers: 'Transfers to the merchant\'s wallets that matched no session, and attributing them.',
  webhookEndpoints: 'Registered webhook endpoints (`/webhooks`), their deliveries and replays.',
  webhookSecret: 'The signing secret of per-session `webhookUrl` deliveries, one per mode.',
  events: 'Events (the webhook envelopes), their deliveries and attempts, and redelivery.',
  sandbox: 'Sandbox only (test keys): pay a sandbox session on the simulated chain, and sweep an address-mode one.',
  x402: 'x402 facilitator for the merchant\'s own resource servers: verify and settle EIP-3009 payments into the merchant\'s wallets.',
};
