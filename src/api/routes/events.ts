import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { auditApiChange } from '../audit.ts';
import { emptyBodyAsObject, OPTIONAL_BODY } from '../optionalBody.ts';
import { authOf, type RequestAuth } from '../auth.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import {
  attemptAsShown,
  getEvent,
  listAttempts,
  listDeliveries,
  listEvents,
  resendEvent,
  TEST_EVENT,
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
    signaturesSent: Type.Union([Type.Integer({ minimum: 1, maximum: 2 }), Type.Null()], {
      description:
        "How many signatures X-Service-Signature carried: 1, or 2 during a secret rotation's overlap (the new secret's first). Never their values. null for attempts logged before this was recorded.",
    }),
  },
  {
    additionalProperties: false,
    description:
      'One HTTP attempt: its timing, the status and the start of the response body, or the network error; for write keys also the request as sent, never its signature.',
  },
);

// Moved to src/delivery/log.ts (the dashboard shows attempts too); its tests import it from here.
export { redactSignatures } from '../../delivery/index.ts';

/** An attempt as `auth` may see it (attemptAsShown): a `write` key also sees the request. */
function attemptView(attempt: AttemptLogRecord, auth: RequestAuth) {
  const { startedAt, ...rest } = attemptAsShown(attempt, { seesRequest: auth.scopes.includes('write') });
  return { ...rest, startedAt: startedAt.toISOString() };
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
/** Every type an event can have (what an endpoint can subscribe to, less `*`, and the test event). */
const LISTED_EVENT_TYPES: readonly string[] = [...SUBSCRIBABLE_EVENTS.filter((type) => type !== '*'), TEST_EVENT];

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
        ...OPTIONAL_BODY,
        response: {
          202: Type.Object(
            { eventId: Type.String(), deliveries: Type.Array(Type.String(), { description: 'Ids of the new deliveries (`whd_…`).' }) },
            { additionalProperties: false },
          ),
          ...webhookErrors(400, 401, 403, 404, 409, 422, 429),
        },
      },
      // No body at all means "to every original target", as an empty object does.
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => {
      const deliveries = await resendEvent(deps.store, authOf(request), request.params.id, { endpointId: request.body.endpointId }, (sql, made) =>
        auditApiChange(sql, request, 'webhook.redelivered', {
          target: request.body.endpointId ?? request.params.id,
          details: { eventId: request.params.id, deliveries: made },
        }),
      );
      return reply.status(202).send({ eventId: request.params.id, deliveries });
    },
  );
}
