import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { listenerHealth } from '../../ingest/listenerHealth.ts';
import { ChainSchema, READ_ERRORS, errorResponses } from '../schemas.ts';

const ChainStatusSchema = Type.Object(
  {
    chain: ChainSchema,
    mode: Type.Unsafe<string>({
      type: 'string',
      enum: ['live', 'sandbox', 'sandbox-only'],
      description:
        '`live`: a live key on a chain with an RPC URL, watched by a listener. `sandbox`: a test key (simulated chain). `sandbox-only`: a live key on a chain without RPC URL, not watched in live mode.',
    }),
    status: Type.Unsafe<string>({
      type: 'string',
      enum: ['healthy', 'lagging', 'unknown', 'sandbox-only'],
      description:
        "Live: `healthy` when the listener's head moved within max(60 s, 20 block times), `lagging` when not, `unknown` when no head was seen yet; `sandbox-only` when the chain has no RPC URL. Sandbox: always `healthy`, since a simulated chain's head is a function of the clock and cannot lag.",
    }),
    headBlock: Type.Union([Type.String(), Type.Null()], { description: 'Last head block (slot on solana), integer text. Sandbox: the simulated height now.' }),
    processedBlock: Type.Union([Type.String(), Type.Null()], {
      description: 'The block processed so far. Sandbox: the height the simulator last advanced to, which moves only while a sandbox payment is in flight.',
    }),
    headSeenAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lagSeconds: Type.Union([Type.Integer(), Type.Null()], { description: 'Seconds since the head was last seen (0 in the sandbox).' }),
  },
  { additionalProperties: false },
);

const STATUS_DESCRIPTION = [
  "The API and each chain listener, for the caller's mode. The top-level `status` is `healthy`, or `degraded` with `reasons` saying why:",
  'for a live key, a watched chain that is `lagging` or `unknown`, or no chain watched at all (no `SVC_<CHAIN>_RPC_URL` is set, so no live payment can be detected).',
  'Chains without RPC URL are `sandbox-only` for live keys; that alone (with at least one chain watched) is a deployment choice, not a fault.',
  'For a test key the simulated chains are always `healthy`: their heads only move while a sandbox payment is in flight, which is not a lag.',
].join(' ');

/**
 * `GET /status` (Interface B): the API and each chain listener's health from chain_heads, for
 * the caller's mode (live keys: live ingesters; test keys: the sandbox's simulated chains).
 */
export function statusRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get(
    '/status',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'API and chain listener health',
        description: STATUS_DESCRIPTION,
        response: {
          200: Type.Object(
            {
              status: Type.Unsafe<string>({ type: 'string', enum: ['healthy', 'degraded'] }),
              reasons: Type.Array(Type.String(), { description: 'Why the status is `degraded`, one sentence each; empty when `healthy`.' }),
              api: Type.Object({ status: Type.String(), database: Type.String(), uptimeSeconds: Type.Integer() }),
              livemode: Type.Boolean(),
              chains: Type.Array(ChainStatusSchema),
            },
            { additionalProperties: false },
          ),
          ...errorResponses(...READ_ERRORS),
        },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const health = await listenerHealth(deps.store, { config: deps.config, livemode: auth.livemode });
      return {
        status: health.status,
        reasons: health.reasons,
        api: { status: 'healthy', database: 'ok', uptimeSeconds: Math.floor((Date.now() - deps.startedAt.getTime()) / 1000) },
        livemode: auth.livemode,
        chains: health.chains,
      };
    },
  );
}
