import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { errorResponses } from '../schemas.ts';
import { liveChains } from '../../internal/config.ts';
import { loadChains } from '../../internal/chains.ts';
import { DISCOVERY_MAX_LIMIT, listDiscoveryResources } from '../../x402/discovery.ts';

/**
 * x402 discovery over HTTP (docs/agents.md "Discovery"): `GET /discovery/resources`, public, the
 * path and shape of the bazaar extension (@x402/extensions' `DiscoveryResourcesResponse`), and
 * the same under the facilitator's URL (`/api/v1/x402/discovery/resources`), where
 * `withBazaar(new HTTPFacilitatorClient({ url: '<gateway>/api/v1/x402' })).extensions.bazaar.listResources()` asks.
 */

/**
 * Deepest offset served: paging by offset costs the database the rows it skips, and 10,000 links
 * is far beyond any one gateway's opted-in catalog, so a deeper one is a 400, not a slow scan.
 */
const MAX_OFFSET = 10_000;

const Filter = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 128, description }));

const DiscoveryQuery = Type.Object(
  {
    type: Filter('Protocol type: `http` lists every resource, any other nothing.'),
    payTo: Filter('Only resources paying to this address (case-insensitive).'),
    scheme: Filter('Payment scheme: `exact` lists every resource, any other nothing.'),
    network: Filter('Only resources on this CAIP-2 network (`eip155:8453`).'),
    extensions: Filter('Only resources carrying this extension: `bazaar` lists every resource, any other nothing.'),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DISCOVERY_MAX_LIMIT, description: `Page size, 1..${DISCOVERY_MAX_LIMIT}, default 20.` })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, description: `Resources skipped, 0..${MAX_OFFSET}, default 0.` })),
  },
  { additionalProperties: false },
);

const Requirement = Type.Object(
  {
    scheme: Type.Literal('exact'),
    network: Type.String({ description: 'CAIP-2 network (`eip155:<chainId>`).' }),
    amount: Type.String({
      description: "The link's price in the token's base units (the session's 402 may ask a few base units more: its unique due amount).",
    }),
    asset: Type.String(),
    payTo: Type.String({ description: "The link's wallet, or the merchant's default on the chain (an address-mode session's 402 names its deposit address)." }),
    maxTimeoutSeconds: Type.Integer(),
    extra: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

const DiscoveryResource = Type.Object(
  {
    resource: Type.String({
      format: 'uri',
      description: "The link's x402 resource (`/pay/{linkId}/x402`): a GET answers 402 with a fresh session's requirements.",
    }),
    type: Type.Literal('http'),
    x402Version: Type.Literal(2),
    accepts: Type.Array(Requirement),
    lastUpdated: Type.String({ format: 'date-time', description: 'When the link last changed.' }),
    description: Type.String({ description: "The link's description and price." }),
    mimeType: Type.Literal('application/json'),
    serviceName: Type.Optional(Type.String({ description: "The merchant's name (left out when not 1..32 printable ASCII characters, the bazaar's rule)." })),
    extensions: Type.Object({ bazaar: Type.Record(Type.String(), Type.Unknown()) }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

const DiscoveryResponse = Type.Object(
  {
    x402Version: Type.Literal(2),
    items: Type.Array(DiscoveryResource),
    pagination: Type.Object({ limit: Type.Integer(), offset: Type.Integer(), total: Type.Integer() }, { additionalProperties: false }),
  },
  { additionalProperties: false, description: "The bazaar's DiscoveryResourcesResponse: opted-in payment links, newest first." },
);

/** `GET /discovery/resources` at the root. */
export function discoveryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  discoveryRoute(app, deps, '/discovery/resources', false);
}

/** The same under the API prefix as `/x402/discovery/resources` (the facilitator's URL), hidden from the document: one operation, two addresses. */
export function facilitatorDiscoveryRoutes(app: FastifyInstance, deps: ApiDeps): void {
  discoveryRoute(app, deps, '/x402/discovery/resources', true);
}

function discoveryRoute(app: FastifyInstance, deps: ApiDeps, path: string, hidden: boolean): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.get(
    path,
    {
      // Public, like a payment link's page: the per-IP budget applies.
      config: { auth: 'none' },
      schema: {
        ...(hidden ? { hide: true } : {}),
        tags: ['x402'],
        summary: 'x402 discovery: payable payment links',
        description:
          "No API key. The payment links their merchants opted in (`x402Discoverable`), as x402 resources: only active live links on a chain and currency that x402 takes in this gateway. The link's private fields (metadata, webhook and redirect URLs) are never shown. Paged with `limit` and `offset`.",
        querystring: DiscoveryQuery,
        response: { 200: DiscoveryResponse, ...errorResponses(400, 429, 503) },
      },
    },
    async (request, reply) => {
      reply.header('access-control-allow-origin', '*');
      return listDiscoveryResources(
        { store: deps.store, publicUrl: deps.config.publicUrl, liveChains: liveChains(deps.config), chains: loadChains(), offerOf: deps.x402?.offerOf },
        request.query,
      );
    },
  );
}
