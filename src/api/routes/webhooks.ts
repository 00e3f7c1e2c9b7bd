import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { emptyBodyAsObject, OPTIONAL_BODY } from '../optionalBody.ts';
import { authOf } from '../auth.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { auditApiChange } from '../audit.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import { RotateBodySchema, webhookSecretRoutes } from './webhookSecrets.ts';
import {
  DeliverySchema,
  deliveryView,
  EnabledEventsSchema,
  endpointChangeDetails,
  EndpointSchema,
  EndpointWithSecretSchema,
  endpointView,
  iso,
  Nullable,
  RotatedEndpointSchema,
  webhookErrors,
  WebhookUrlSchema,
} from './webhookViews.ts';

// Other modules imported these from here first.
export { DeliverySchema, deliveryView, WebhookErrorSchema, webhookErrors } from './webhookViews.ts';
import {
  changeEndpoint,
  checkUrlForMode,
  deleteEndpoint,
  getEndpoint,
  isDeliveryOfEndpoint,
  listDeliveries,
  listEndpoints,
  MAX_REPLAY_EVENTS,
  registerEndpoint,
  replayWindow,
  rotateSigningSecret,
  sendTestEvent,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  MAX_ENDPOINTS_PER_MODE,
  MAX_ROTATION_OVERLAP_SECONDS,
  TEST_EVENT,
} from '../../delivery/index.ts';

export { SUBSCRIBABLE_EVENTS } from '../../delivery/index.ts';

export const WebhookIdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64, description: 'Endpoint identifier (`we_…`).', 'x-not-found': 'webhook endpoint' }) },
  { additionalProperties: false },
);

/**
 * The URL when it is well formed and (per the key's mode, see SVC_WEBHOOK_ALLOW_PRIVATE) not
 * internal; a 400 naming `field` (the request's field: `url` here, `webhookUrl` on sessions and
 * payment links) otherwise.
 */
export function safeUrl(url: string, deps: Pick<ApiDeps, 'config'>, livemode: boolean, field = 'url'): Promise<string> {
  return checkUrlForMode(url, deps.config, livemode, field);
}

const TAGS = ['Webhooks'];

/**
 * Registered webhook endpoints (spec §4.2 `POST /webhooks`, the rest as Stripe's
 * `/webhook_endpoints`): create (the secret is shown once), list, get, update (re-enable with
 * `status: "enabled"`), delete, rotate the secret, list deliveries, and replay a time window;
 * and the merchant's per-mode secret of session webhookUrls (webhookSecrets.ts).
 */
export function webhookRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.post(
    '/webhooks',
    {
      schema: {
        tags: TAGS,
        summary: 'Register a webhook endpoint',
        description: `Registers a URL to receive signed events (spec §6) of the API key's mode: live keys register live endpoints, test keys sandbox endpoints. The response carries the signing secret, once. At most ${MAX_ENDPOINTS_PER_MODE} endpoints per mode (409 beyond).`,
        body: Type.Object(
          {
            url: WebhookUrlSchema,
            enabledEvents: Type.Optional(EnabledEventsSchema),
            description: Type.Optional(Type.String({ maxLength: 500 })),
          },
          { additionalProperties: false },
        ),
        response: { 201: EndpointWithSecretSchema, ...webhookErrors(400, 401, 403, 409, 422, 429) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const { endpoint, secret } = await registerEndpoint(
        deps.store,
        deps.box,
        deps.config,
        auth,
        { url: request.body.url, description: request.body.description ?? null, enabledEvents: request.body.enabledEvents },
        async (sql, created) => {
          await auditApiChange(sql, request, 'webhook.endpoint_created', {
            target: created.id,
            details: { url: created.url, enabledEvents: created.enabledEvents },
          });
          // What an Idempotency-Key replay returns: the endpoint without its secret (never stored in plaintext).
          await saveIdempotentResponse(sql, request, 201, endpointView(created));
        },
      );
      return reply.status(201).send({ ...endpointView(endpoint), secret });
    },
  );

  typed.get(
    '/webhooks',
    {
      schema: {
        tags: TAGS,
        summary: 'List webhook endpoints',
        response: { 200: Type.Object({ data: Type.Array(EndpointSchema) }, { additionalProperties: false }), ...webhookErrors(401, 403, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return { data: (await listEndpoints(deps.store, auth)).map(endpointView) };
    },
  );

  typed.get(
    '/webhooks/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Get a webhook endpoint',
        params: WebhookIdParams,
        response: { 200: EndpointSchema, ...webhookErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const endpoint = await getEndpoint(deps.store, authOf(request), request.params.id);
      if (!endpoint) throw notFound(`no webhook endpoint ${request.params.id}`);
      return endpointView(endpoint);
    },
  );

  typed.patch(
    '/webhooks/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Update a webhook endpoint',
        description:
          'Changes the URL, the event kinds or the description, or the status: `disabled` stops deliveries (pending ones end), `enabled` re-enables a disabled endpoint and clears its failure streak. Events missed while disabled are not resent automatically: replay them.',
        params: WebhookIdParams,
        body: Type.Object(
          {
            url: Type.Optional(WebhookUrlSchema),
            enabledEvents: Type.Optional(EnabledEventsSchema),
            description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
            status: Type.Optional(Type.Unsafe<'enabled' | 'disabled'>({ type: 'string', enum: ['enabled', 'disabled'] })),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: EndpointSchema, ...webhookErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const body = request.body;
      const auth = authOf(request);
      const before = await getEndpoint(deps.store, auth, request.params.id);
      const endpoint = await changeEndpoint(
        deps.store,
        deps.config,
        auth,
        request.params.id,
        {
          url: body.url,
          enabledEvents: body.enabledEvents,
          status: body.status,
          ...('description' in body ? { description: (body.description as string | null | undefined) ?? null } : {}),
        },
        (sql, changed) =>
          auditApiChange(sql, request, body.status === 'disabled' ? 'webhook.endpoint_disabled' : 'webhook.endpoint_updated', {
            target: changed.id,
            details: endpointChangeDetails(before, body, changed),
          }),
      );
      return endpointView(endpoint);
    },
  );

  typed.delete(
    '/webhooks/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a webhook endpoint',
        description: 'Stops deliveries to it at once (pending ones end). Its delivery log stays readable through the events API.',
        params: WebhookIdParams,
        response: {
          200: Type.Object({ id: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }),
          ...webhookErrors(400, 401, 403, 404, 429),
        },
      },
    },
    async (request) => {
      const deleted = await deps.store.transaction(async (sql) => {
        const done = await deleteEndpoint(sql, authOf(request), request.params.id);
        // The dashboard's action for a deletion (an endpoint deleted is disabled for good).
        if (done) await auditApiChange(sql, request, 'webhook.endpoint_disabled', { target: request.params.id, details: { deleted: true } });
        return done;
      });
      if (!deleted) throw notFound(`no webhook endpoint ${request.params.id}`);
      return { id: request.params.id, deleted: true };
    },
  );

  typed.post(
    '/webhooks/:id/rotate-secret',
    {
      schema: {
        tags: TAGS,
        summary: 'Rotate the signing secret',
        description: `Makes a new secret, shown once in this response. The old one keeps signing beside it for \`expiresIn\` seconds (default and most ${MAX_ROTATION_OVERLAP_SECONDS}): every delivery meanwhile carries two signatures in X-Service-Signature, newest first, so receivers verify with either while the new one is deployed. \`expiresIn: 0\` stops the old one at once (a leaked secret). A secret still overlapping from an earlier rotation stops now.`,
        params: WebhookIdParams,
        body: RotateBodySchema,
        ...OPTIONAL_BODY,
        response: { 200: RotatedEndpointSchema, ...webhookErrors(400, 401, 403, 404, 409, 422, 429) },
      },
      // No body at all means the default overlap, as an empty object does.
      preValidation: emptyBodyAsObject,
    },
    async (request) => {
      const expiresInSeconds = request.body.expiresIn ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
      const rotated = await deps.store.transaction(async (sql) => {
        const result = await rotateSigningSecret(sql, deps.box, authOf(request), request.params.id, expiresInSeconds);
        await auditApiChange(sql, request, 'webhook.secret_rotated', { target: result.endpoint.id, details: { expiresIn: expiresInSeconds } });
        await saveIdempotentResponse(sql, request, 200, endpointView(result.endpoint));
        return result;
      });
      return { ...endpointView(rotated.endpoint), secret: rotated.secret, previousSecretExpiresAt: iso(rotated.previousSecretExpiresAt) };
    },
  );

  typed.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags: TAGS,
        summary: 'List deliveries to an endpoint',
        description: 'Newest first, paged like the other lists: pass `nextCursor` as `startingAfter`.',
        params: WebhookIdParams,
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, 1..100, default 20.' })),
            startingAfter: Type.Optional(
              Type.String({ minLength: 1, maxLength: 64, description: 'Cursor: the id of the last delivery of the previous page.' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            { data: Type.Array(DeliverySchema), hasMore: Type.Boolean(), nextCursor: Type.Union([Type.String(), Type.Null()]) },
            { additionalProperties: false },
          ),
          ...webhookErrors(400, 401, 403, 404, 429),
        },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const { limit = 20, startingAfter } = request.query;
      if (!(await getEndpoint(deps.store, auth, request.params.id))) throw notFound(`no webhook endpoint ${request.params.id}`);
      if (startingAfter !== undefined) {
        if (!(await isDeliveryOfEndpoint(deps.store, auth, { deliveryId: startingAfter, endpointId: request.params.id })))
          throw badRequest(`startingAfter ${JSON.stringify(startingAfter)} is not a delivery to this endpoint`);
      }
      const page = await listDeliveries(deps.store, auth, { endpointId: request.params.id, limit: limit + 1, startingAfter });
      const data = page.slice(0, limit).map(deliveryView);
      const hasMore = page.length > limit;
      return { data, hasMore, nextCursor: hasMore ? data[data.length - 1]!.id : null };
    },
  );

  typed.post(
    '/webhooks/:id/replay',
    {
      schema: {
        tags: TAGS,
        summary: 'Replay a time window of events to an endpoint',
        description: `Sends, as new deliveries (with the usual retries), every event of this mode created in [from, to) that the endpoint subscribes to and missed, oldest first: each event with no delivery to this endpoint that succeeded or is still pending (failed while it was down, ended by its disabling, made while it was disabled or before it was registered). An event it already received is not sent again (use POST /events/{id}/redeliver), and replaying a window twice queues nothing new. At most ${MAX_REPLAY_EVENTS} events per request: narrow a wider window.`,
        params: WebhookIdParams,
        body: Type.Object(
          {
            from: Type.String({ format: 'date-time', description: 'Start of the window (inclusive), ISO 8601.' }),
            to: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window (exclusive), ISO 8601; default now.' })),
          },
          { additionalProperties: false },
        ),
        response: {
          202: Type.Object({ endpointId: Type.String(), replayed: Type.Integer({ description: 'Deliveries created.' }) }, { additionalProperties: false }),
          ...webhookErrors(400, 401, 403, 404, 409, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const from = new Date(request.body.from);
      const to = request.body.to === undefined ? new Date() : new Date(request.body.to);
      const replayed = await replayWindow(deps.store, authOf(request), request.params.id, { from, to }, (sql, count) =>
        auditApiChange(sql, request, 'webhook.redelivered', {
          target: request.params.id,
          details: { replay: { from: from.toISOString(), to: to.toISOString() }, deliveries: count },
        }),
      );
      return reply.status(202).send({ endpointId: request.params.id, replayed });
    },
  );

  typed.post(
    '/webhooks/:id/test',
    {
      schema: {
        tags: TAGS,
        summary: 'Send a test event to an endpoint',
        description: `Sends a \`${TEST_EVENT}\` event (\`data.test\` is true) to this endpoint only, whatever event kinds it subscribes to: a real delivery, signed with the endpoint's secret(s), logged and retried like any other. 409 when the endpoint is disabled.`,
        params: WebhookIdParams,
        response: {
          202: Type.Object(
            {
              endpointId: Type.String(),
              eventId: Type.String({ description: 'The test event (`evt_…`).' }),
              deliveryId: Type.String({ description: 'Its delivery (`whd_…`).' }),
            },
            { additionalProperties: false },
          ),
          ...webhookErrors(400, 401, 403, 404, 409, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const sent = await sendTestEvent(deps.store, authOf(request), request.params.id);
      return reply.status(202).send({ endpointId: request.params.id, ...sent });
    },
  );

  webhookSecretRoutes(app, deps);
}
