import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf, type RequestAuth } from '../auth.ts';
import { badRequest, conflict, notFound } from '../../internal/errors.ts';
import {
  getEvent,
  listAttempts,
  listDeliveries,
  listEvents,
  redeliverEvent,
  RESPONSE_EXCERPT_BYTES,
  type AttemptLogRecord,
  type EventRecord,
} from '../../delivery/index.ts';
import { SUBSCRIBABLE_EVENTS } from './webhooks.ts';
import { DeliverySchema, deliveryView, webhookErrors } from './webhookViews.ts';

const Nullable = (schema: ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>) => Type.Union([schema, Type.Null()]);

const EventSchema = Type.Object(
  {
    id: Type.String({ description: 'Event identifier (`evt_…`): the same in every delivery, for deduplication.' }),
    event: Type.String({ description: 'Event kind (spec §6.1), or `webhook_endpoint.disabled`.' }),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'The event data, as delivered.' }),
    timestamp: Type.String({ format: 'date-time', description: 'When the event happened (not when it was delivered).' }),
    livemode: Type.Boolean(),
    paymentId: Nullable(Type.String()),
    refundId: Nullable(Type.String()),
    dispatchedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When deliveries were made for it; null for a moment after it happens.',
    }),
  },
  {
    additionalProperties: false,
    description: 'An event: `id`, `event`, `data`, `timestamp`, `livemode` are the webhook envelope (spec §6.2) exactly as delivered.',
  },
);

const AttemptSchema = Type.Object(
  {
    id: Type.String({ description: 'Attempt identifier (`wha_…`).' }),
    deliveryId: Type.String(),
    endpointId: Nullable(Type.String()),
    url: Type.String(),
    attemptNumber: Type.Integer({ description: '1 for the first attempt of a delivery.' }),
    requestHeaders: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description: 'Headers as sent, except X-Service-Signature, which is never stored nor shown. Only for keys with the `write` scope.',
      }),
    ),
    requestBody: Type.Optional(Type.String({ description: 'Body as sent (the same bytes on every attempt). Only for keys with the `write` scope.' })),
    responseStatus: Nullable(Type.Integer()),
    responseBodyExcerpt: Type.Union([Type.String(), Type.Null()], {
      description: `The first ${RESPONSE_EXCERPT_BYTES} bytes of the response body; anything in it that could be a signature (\`sha256=\` and 64 hex digits in any case or URL-encoded, bare 64 hex digits, 32 bytes of base64) shows as \`[redacted]\`.`,
    }),
    error: Nullable(Type.String()),
    durationMs: Type.Integer(),
    succeeded: Type.Boolean(),
    startedAt: Type.String({ format: 'date-time' }),
  },
  {
    additionalProperties: false,
    description:
      'One HTTP attempt: its timing, the status and the start of the response body, or the network error; for write keys also the request as sent, never its signature.',
  },
);

/**
 * `text` with everything that could be an HMAC-SHA256 signature replaced by `[redacted]`: the
 * `sha256=` form in any case and URL-encoded, any run of exactly 64 hex digits, and any run of
 * 43 base64 or base64url characters (32 bytes). A receiver may echo its request in any of these
 * encodings; redacting too much of a debugging excerpt costs little.
 */
export function redactSignatures(text: string): string {
  return text
    .replace(/sha256(?:=|%3D)[0-9a-f]{64}/gi, 'sha256=[redacted]')
    .replace(/(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])/gi, '[redacted]')
    .replace(/(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{43}(?:=|%3D)?(?![A-Za-z0-9+/_-])/g, '[redacted]');
}

/**
 * An attempt as `auth` may see it. Nobody gets a signature: a signed request is what a receiver
 * trusts, and one taken from the log could be replayed (or, before migration 014, sandbox
 * signatures verified at live receivers). A read-only key sees how it went (timing, status,
 * response excerpt), not the request; a write key also sees the request's headers and body,
 * which are the event it can read anyway. A receiver that echoes its request back could put a
 * signature in the response excerpt: anything shaped like one is redacted.
 */
function attemptView(attempt: AttemptLogRecord, auth: RequestAuth) {
  const { requestHeaders, requestBody, startedAt, responseBodyExcerpt, ...rest } = attempt;
  return {
    ...rest,
    ...(auth.scopes.includes('write') ? { requestHeaders, requestBody } : {}),
    responseBodyExcerpt: responseBodyExcerpt === null ? null : redactSignatures(responseBodyExcerpt),
    startedAt: startedAt.toISOString(),
  };
}

const EventIdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64, description: 'Event identifier (`evt_…`).', 'x-not-found': 'event' }) },
  { additionalProperties: false },
);

function eventView(event: EventRecord) {
  return {
    id: event.id,
    event: event.event,
    data: event.data,
    timestamp: event.timestamp,
    livemode: event.livemode,
    paymentId: event.paymentId,
    refundId: event.refundId,
    dispatchedAt: event.dispatchedAt ? event.dispatchedAt.toISOString() : null,
  };
}

const TAGS = ['Webhooks'];
/** Every type an event can have (what an endpoint can subscribe to, less `*`). */
const LISTED_EVENT_TYPES: readonly string[] = SUBSCRIBABLE_EVENTS.filter((type) => type !== '*');

/**
 * The event log (Stripe's `/events`): list and filter, read one, its deliveries and every
 * attempt, and redeliver it.
 */
export function eventRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.get(
    '/events',
    {
      schema: {
        tags: TAGS,
        summary: 'List events',
        description: "Events of the key's mode, newest first, kept indefinitely.",
        querystring: Type.Object(
          {
            type: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this kind, e.g. `payment.confirmed`.' })),
            paymentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only events of this payment session.' })),
            createdAfter: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after (ISO 8601).' })),
            createdBefore: Type.Optional(Type.String({ format: 'date-time', description: 'Created before (ISO 8601).' })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, 1..100, default 20.' })),
            startingAfter: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Cursor: the id of the last event of the previous page.' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            { data: Type.Array(EventSchema), hasMore: Type.Boolean(), nextCursor: Type.Union([Type.String(), Type.Null()]) },
            { additionalProperties: false },
          ),
          ...webhookErrors(400, 401, 403, 429),
        },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const query = request.query;
      const limit = query.limit ?? 20;
      // Like the other lists: a filter or cursor that cannot match is a mistake to report, not an empty page.
      if (query.type !== undefined && !LISTED_EVENT_TYPES.includes(query.type)) {
        throw badRequest(`type ${JSON.stringify(query.type)} is not an event type; one of ${LISTED_EVENT_TYPES.join(', ')}`);
      }
      if (query.startingAfter !== undefined && !(await getEvent(deps.store, auth, query.startingAfter))) {
        throw badRequest(`startingAfter ${JSON.stringify(query.startingAfter)} is not an event of this account`);
      }
      const page = await listEvents(deps.store, auth, {
        type: query.type,
        paymentId: query.paymentId,
        createdAfter: query.createdAfter === undefined ? undefined : new Date(query.createdAfter),
        createdBefore: query.createdBefore === undefined ? undefined : new Date(query.createdBefore),
        limit,
        startingAfter: query.startingAfter,
      });
      const data = page.data.map(eventView);
      return { data, hasMore: page.hasMore, nextCursor: page.hasMore ? data[data.length - 1]!.id : null };
    },
  );

  typed.get(
    '/events/:id',
    { schema: { tags: TAGS, summary: 'Get an event', params: EventIdParams, response: { 200: EventSchema, ...webhookErrors(400, 401, 403, 404, 429) } } },
    async (request) => {
      const event = await getEvent(deps.store, authOf(request), request.params.id);
      if (!event) throw notFound(`no event ${request.params.id}`);
      return eventView(event);
    },
  );

  typed.get(
    '/events/:id/deliveries',
    {
      schema: {
        tags: TAGS,
        summary: "List an event's deliveries",
        params: EventIdParams,
        response: { 200: Type.Object({ data: Type.Array(DeliverySchema) }, { additionalProperties: false }), ...webhookErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      if (!(await getEvent(deps.store, auth, request.params.id))) throw notFound(`no event ${request.params.id}`);
      return { data: (await listDeliveries(deps.store, auth, { eventId: request.params.id })).map(deliveryView) };
    },
  );

  typed.get(
    '/events/:id/attempts',
    {
      schema: {
        tags: TAGS,
        summary: "List an event's delivery attempts",
        description:
          'Every attempt to every target, oldest first: when and how long, the response status and the first 2 KiB of the response body, or the network error. Keys with the `write` scope also see the request headers and body as sent; no key ever sees the X-Service-Signature header.',
        params: EventIdParams,
        response: { 200: Type.Object({ data: Type.Array(AttemptSchema) }, { additionalProperties: false }), ...webhookErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      if (!(await getEvent(deps.store, auth, request.params.id))) throw notFound(`no event ${request.params.id}`);
      const attempts = await listAttempts(deps.store, auth, request.params.id);
      return { data: attempts.map((attempt) => attemptView(attempt, auth)) };
    },
  );

  typed.post(
    '/events/:id/redeliver',
    {
      schema: {
        tags: TAGS,
        summary: 'Redeliver an event',
        description:
          'Sends the event again, same id and same body, freshly signed, as a new delivery with the usual retries: to `endpointId` when given (any enabled endpoint of this mode), otherwise to every target its first dispatch reached that is still enabled. 409 when the event has not been dispatched yet (it is, within a second) or the endpoint is disabled.',
        params: EventIdParams,
        body: Type.Object(
          { endpointId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Endpoint to send it to (`we_…`).' })) },
          { additionalProperties: false, description: 'Optional: a request without a body redelivers to every original target.' },
        ),
        response: {
          202: Type.Object(
            { eventId: Type.String(), deliveries: Type.Array(Type.String(), { description: 'Ids of the new deliveries (`whd_…`).' }) },
            { additionalProperties: false },
          ),
          ...webhookErrors(400, 401, 403, 404, 409, 422, 429),
        },
      },
      // No body at all means "to every original target", as an empty object does.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const endpointId = request.body.endpointId;
      const result = await deps.store.transaction((sql) => redeliverEvent(sql, authOf(request), request.params.id, { endpointId }));
      if (result === undefined)
        throw notFound(endpointId ? `no event ${request.params.id} or no webhook endpoint ${endpointId}` : `no event ${request.params.id}`);
      if (result === 'not_dispatched') throw conflict('the event has not been dispatched yet; it will be within a second');
      if (result === 'endpoint_disabled') throw conflict('the endpoint is disabled: enable it first (PATCH status "enabled")');
      if (result.length === 0) throw conflict('the event has no enabled target to redeliver to: pass endpointId');
      return reply.status(202).send({ eventId: request.params.id, deliveries: result });
    },
  );
}
