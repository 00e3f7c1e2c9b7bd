import { Type, type TSchema } from 'typebox';
import { SUBSCRIBABLE_EVENTS, type DeliveryRecord, type WebhookEndpoint } from '../../delivery/index.ts';

/**
 * How the webhook and event routes show endpoints and deliveries, and their schemas for the
 * OpenAPI document. Secrets appear only in the responses that make them (create, rotate).
 */

export const WebhookErrorSchema = Type.Object({ error: Type.String({ description: 'What is wrong, for people.' }) }, { additionalProperties: false });

/** The error responses of a route, for the OpenAPI document. */
export function webhookErrors(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((status) => [status, WebhookErrorSchema]));
}

export const Nullable = (schema: TSchema, description?: string) => Type.Union([schema, Type.Null()], description ? { description } : {});

export const EndpointSchema = Type.Object(
  {
    id: Type.String({ description: 'Endpoint identifier (`we_…`).' }),
    url: Type.String(),
    description: Nullable(Type.String()),
    enabledEvents: Type.Array(Type.String()),
    status: Type.Unsafe<string>({
      type: 'string',
      enum: ['enabled', 'disabled'],
      description: '`disabled` by the merchant, by a 410 Gone answer, or after 5 days of nothing but failed attempts.',
    }),
    disabledReason: Nullable(Type.String()),
    disabledAt: Nullable(Type.String({ format: 'date-time' })),
    failingSince: Nullable(Type.String({ format: 'date-time' }), 'First failed attempt since the last success; null while healthy.'),
    livemode: Type.Boolean({ description: 'Registered with a live key: receives live events; with a test key: sandbox events.' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'A registered webhook endpoint. Its signing secret is shown only at creation and rotation.' },
);

export const EndpointWithSecretSchema = Type.Object(
  {
    ...EndpointSchema.properties,
    secret: Type.Optional(
      Type.String({
        description:
          'The signing secret (`whsec_…`): HMAC-SHA256 key of X-Service-Signature. Shown this once; store it now. Absent from an idempotent replay (same Idempotency-Key): secrets are never stored in plaintext, so rotate to get a new one.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const RotatedEndpointSchema = Type.Object(
  {
    ...EndpointWithSecretSchema.properties,
    previousSecretExpiresAt: Nullable(
      Type.String({ format: 'date-time' }),
      'Until when the replaced secret still signs (a second signature); null when it stopped at once.',
    ),
  },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'Delivery identifier (`whd_…`).' }),
    eventId: Type.String(),
    endpointId: Nullable(Type.String(), "null for a session's webhookUrl."),
    url: Type.String(),
    origin: Type.Unsafe<string>({ type: 'string', enum: ['dispatch', 'redeliver', 'replay'] }),
    status: Type.Unsafe<string>({ type: 'string', enum: ['pending', 'succeeded', 'failed'] }),
    attemptCount: Type.Integer(),
    nextAttemptAt: Nullable(Type.String({ format: 'date-time' })),
    lastAttemptAt: Nullable(Type.String({ format: 'date-time' })),
    lastResponseStatus: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    completedAt: Nullable(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false, description: 'One event sent to one target, with its retries.' },
);

export const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** An endpoint as the API shows it (never its secret). */
export function endpointView(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    enabledEvents: endpoint.enabledEvents,
    status: endpoint.status,
    disabledReason: endpoint.disabledReason,
    disabledAt: iso(endpoint.disabledAt),
    failingSince: iso(endpoint.failingSince),
    livemode: endpoint.livemode,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}

/** A delivery as the API shows it. */
export function deliveryView(delivery: DeliveryRecord) {
  return {
    ...delivery,
    nextAttemptAt: iso(delivery.nextAttemptAt),
    lastAttemptAt: iso(delivery.lastAttemptAt),
    createdAt: delivery.createdAt.toISOString(),
    completedAt: iso(delivery.completedAt),
  };
}

/** The event kinds an endpoint subscribes to (POST and PATCH /webhooks). */
export const EnabledEventsSchema = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...SUBSCRIBABLE_EVENTS] }), {
  minItems: 1,
  maxItems: SUBSCRIBABLE_EVENTS.length,
  uniqueItems: true,
  description: 'Event kinds to receive; `["*"]` (the default) receives every kind, including kinds added later.',
});

/** An endpoint's URL (POST and PATCH /webhooks). */
export const WebhookUrlSchema = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Absolute http(s) URL without credentials. Hosts that resolve to private, loopback or link-local addresses are refused for live endpoints unless the operator sets SVC_WEBHOOK_ALLOW_PRIVATE=true; sandbox (test-key) endpoints may use them unless it is false, so a local receiver works in development. Redirects are not followed.',
});

/** What an endpoint change's audit entry says: a new URL with the one it replaced, new event kinds, the status asked for. */
export function endpointChangeDetails(
  before: Pick<WebhookEndpoint, 'url'> | undefined,
  body: { url?: string; enabledEvents?: string[]; status?: string },
  changed: WebhookEndpoint,
): Record<string, unknown> {
  return {
    ...(body.url !== undefined && body.url !== before?.url ? { url: changed.url, previousUrl: before?.url ?? null } : {}),
    ...(body.enabledEvents ? { enabledEvents: changed.enabledEvents } : {}),
    ...(body.status ? { status: body.status } : {}),
  };
}
