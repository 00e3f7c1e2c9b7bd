import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { emptyBodyAsObject, OPTIONAL_BODY } from '../optionalBody.ts';
import { authOf } from '../auth.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { auditApiChange } from '../audit.ts';
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  getMerchantSecretInfo,
  MAX_ROTATION_OVERLAP_SECONDS,
  rotateSessionSecret,
  type MerchantSecretInfo,
} from '../../delivery/index.ts';
import { iso, Nullable, webhookErrors } from './webhookViews.ts';

/** The body of both rotations (endpoint and merchant secret); no body is the default overlap. */
export const RotateBodySchema = Type.Object(
  {
    expiresIn: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_ROTATION_OVERLAP_SECONDS,
        description: `Seconds the replaced secret keeps signing beside the new one, 0 to ${MAX_ROTATION_OVERLAP_SECONDS}; default ${DEFAULT_ROTATION_OVERLAP_SECONDS}. 0 stops it at once (use it when the old secret leaked).`,
      }),
    ),
  },
  { additionalProperties: false, description: 'Optional: a request without a body keeps the old secret signing for the default overlap.' },
);

const SecretInfoProperties = {
  livemode: Type.Boolean({ description: "The mode whose secret this is: the API key's mode. Sandbox and live deliveries are signed with different secrets." }),
  createdAt: Nullable(
    Type.String({ format: 'date-time' }),
    'null: this mode has no secret yet (a merchant from before per-mode secrets: one is made at its first sandbox delivery, and nobody has seen it; rotate to get one).',
  ),
  rotatedAt: Nullable(Type.String({ format: 'date-time' })),
  previousSecretExpiresAt: Nullable(
    Type.String({ format: 'date-time' }),
    'Until when the replaced secret still signs (a second signature); null when only one secret signs.',
  ),
};

const SecretInfoSchema = Type.Object(SecretInfoProperties, {
  additionalProperties: false,
  description: "The merchant's signing secret for per-session webhookUrl deliveries of this mode (never the secret itself).",
});

const RotatedSecretSchema = Type.Object(
  {
    ...SecretInfoProperties,
    secret: Type.Optional(
      Type.String({
        description:
          'The new signing secret (`whsec_…`). Shown this once; store it now. Absent from an idempotent replay (same Idempotency-Key): rotate again to get a new one.',
      }),
    ),
  },
  { additionalProperties: false },
);

function secretView(info: MerchantSecretInfo | undefined, livemode: boolean) {
  return {
    livemode,
    createdAt: info ? info.createdAt.toISOString() : null,
    rotatedAt: info ? iso(info.rotatedAt) : null,
    previousSecretExpiresAt: info ? iso(info.previousSecretExpiresAt) : null,
  };
}

const TAGS = ['Webhooks'];

/**
 * The merchant's signing secret for per-session `webhookUrl` deliveries, one per mode: the API
 * key's mode selects it, so a test key reads and rotates only the sandbox secret, and rotating
 * the live one takes a live key with the `write` scope. (Registered endpoints have their own
 * secrets: POST /webhooks/{id}/rotate-secret.)
 */
export function webhookSecretRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.get(
    '/webhook-secret',
    {
      schema: {
        tags: TAGS,
        summary: "Read the state of this mode's session webhook secret",
        description: 'When the secret of per-session webhookUrl deliveries was made and rotated, and until when a replaced one still signs. Never the secret.',
        response: { 200: SecretInfoSchema, ...webhookErrors(401, 403, 429) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return secretView(await getMerchantSecretInfo(deps.store, auth), auth.livemode);
    },
  );

  typed.post(
    '/webhook-secret/rotate',
    {
      schema: {
        tags: TAGS,
        summary: "Rotate this mode's session webhook secret",
        description: `Makes a new secret for per-session webhookUrl deliveries of the API key's mode (a test key: sandbox; a live key: live), shown once in this response. The old one keeps signing beside it for \`expiresIn\` seconds (default and most ${MAX_ROTATION_OVERLAP_SECONDS}): every delivery meanwhile carries two signatures in X-Service-Signature, newest first. \`expiresIn: 0\` stops the old one at once. A secret still overlapping from an earlier rotation stops now.`,
        body: RotateBodySchema,
        ...OPTIONAL_BODY,
        response: { 200: RotatedSecretSchema, ...webhookErrors(400, 401, 403, 409, 422, 429) },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => {
      const auth = authOf(request);
      const expiresInSeconds = request.body.expiresIn ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
      const rotated = await deps.store.transaction(async (sql) => {
        const result = await rotateSessionSecret(sql, deps.box, auth, expiresInSeconds);
        // The target as the dashboard names it.
        await auditApiChange(sql, request, 'webhook.secret_rotated', {
          target: `session secret (${auth.livemode ? 'live' : 'test'})`,
          details: { expiresIn: expiresInSeconds },
        });
        // What an Idempotency-Key replay returns: everything but the secret (never stored in plaintext).
        await saveIdempotentResponse(sql, request, 200, secretView(result.info, auth.livemode));
        return result;
      });
      return { ...secretView(rotated.info, auth.livemode), secret: rotated.secret };
    },
  );
}
