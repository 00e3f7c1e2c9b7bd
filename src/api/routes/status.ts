import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { CHAIN_NAMES, liveChains } from '../../internal/config.ts';
import { loadChains } from '../../internal/chains.ts';
import { ChainSchema, READ_ERRORS, errorResponses } from '../schemas.ts';

/**
 * A listener is healthy when its head moved within this many block times, and never less than a
 * minute: slow chains and short provider hiccups must not flap the status.
 */
const STALE_BLOCK_TIMES = 20;
const MIN_STALE_SECONDS = 60;

const ChainStatusSchema = Type.Object(
  {
    chain: ChainSchema,
    mode: Type.Unsafe<string>({ type: 'string', enum: ['live', 'sandbox', 'sandbox-only'], description: '`sandbox-only`: a live key on a chain without RPC URL.' }),
    status: Type.Unsafe<string>({ type: 'string', enum: ['healthy', 'lagging', 'unknown', 'sandbox-only'] }),
    headBlock: Type.Union([Type.String(), Type.Null()], { description: 'Last head block (slot on solana), integer text.' }),
    processedBlock: Type.Union([Type.String(), Type.Null()]),
    headSeenAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lagSeconds: Type.Union([Type.Integer(), Type.Null()], { description: 'Seconds since the head was last seen.' }),
  },
  { additionalProperties: false },
);

/**
 * `GET /status` (Interface B): the API and each chain listener's health from chain_heads, for
 * the caller's mode (live keys: live ingesters; test keys: the sandbox chains).
 */
export function statusRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get(
    '/status',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'API and chain listener health',
        response: {
          200: Type.Object(
            {
              status: Type.Unsafe<string>({ type: 'string', enum: ['ok', 'degraded'] }),
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
      const chains = loadChains();
      const live = new Set(liveChains(deps.config));
      const { rows } = await deps.store.query<{ chain: string; head_block: bigint | null; processed_block: bigint | null; head_seen_at: Date | null; lag: number | null }>(
        `SELECT chain, head_block, processed_block, head_seen_at, floor(extract(epoch FROM now() - head_seen_at))::int AS lag FROM chain_heads WHERE livemode = $1`,
        [auth.livemode],
      );
      const byChain = new Map(rows.map((row) => [row.chain, row]));
      const report = CHAIN_NAMES.map((name) => {
        const row = byChain.get(name);
        if (auth.livemode && !live.has(name)) {
          return { chain: name, mode: 'sandbox-only', status: 'sandbox-only', headBlock: null, processedBlock: null, headSeenAt: null, lagSeconds: null };
        }
        const staleAfter = Math.max(MIN_STALE_SECONDS, (chains[name].blockTimeMs * STALE_BLOCK_TIMES) / 1000);
        const status = !row?.head_seen_at ? 'unknown' : (row.lag ?? 0) <= staleAfter ? 'healthy' : 'lagging';
        return {
          chain: name,
          mode: auth.livemode ? 'live' : 'sandbox',
          status,
          headBlock: row?.head_block?.toString() ?? null,
          processedBlock: row?.processed_block?.toString() ?? null,
          headSeenAt: row?.head_seen_at?.toISOString() ?? null,
          lagSeconds: row?.lag ?? null,
        };
      });
      const degraded = report.some((chain) => chain.status === 'lagging');
      return {
        status: degraded ? 'degraded' : 'ok',
        api: { status: 'healthy', database: 'ok', uptimeSeconds: Math.floor((Date.now() - deps.startedAt.getTime()) / 1000) },
        livemode: auth.livemode,
        chains: report,
      };
    },
  );
}
