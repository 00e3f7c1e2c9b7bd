import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ApiDeps } from './deps.ts';

/** What the document says before any route adds itself. */
const DESCRIPTION = `svc gateway takes stablecoin payments (USDC, USDT) for a merchant, straight into the merchant's own
wallet. Your backend asks for a payment, sends the customer to the page or address it gets back,
and hears through a signed webhook when the money has arrived. There are two ways to ask, which
do the same thing and see the same payments: **Interface A** is the small one, a "session" with a
bearer key (create it, read it, that is all most shops need); **Interface B** is the full one, a
"payment" with an \`X-API-Key\` header, plus refunds, payment links, webhooks, wallets and
events. Pick whichever your code finds easier; you can mix them.

Two interfaces over one resource, the payment session: **Interface A** (\`/sessions\`, bearer
authentication) and **Interface B** (\`/payments\` and the rest, \`X-API-Key\` header). Both
authentication headers work on every endpoint, and every path is also served under \`/v1\`
instead of \`/api/v1\`.

- Errors are always \`{"error": "<message>"}\`.
- Amounts are decimal text in token units (never JSON numbers); base-unit fields are integer text.
- Every POST accepts an \`Idempotency-Key\` header (1..255 characters, per account and mode whichever API key sends it, kept 24 h).
- Rate limits per minute: payment creation 10 per key, reads 30 per key, other writes 30 per key,
  any endpoint 200 per IP. A 429 carries \`Retry-After\` (seconds) and \`RateLimit-*\` headers.
- Test keys (\`svc_test_\`, \`svc_sk_\`) see only sandbox data, live keys only production data.`;

/**
 * Registers @fastify/swagger (OpenAPI 3.1, built from the route schemas that validate
 * requests), serves it at `<prefix>/openapi.json`, and the interactive reference (Swagger UI,
 * its files served by the daemon, no CDN) at `/docs`. Must run before any route is added.
 */
export function registerOpenApi(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...route.config, auth: 'none' };
  });
  app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'svc gateway API', version: '1.0.0', description: DESCRIPTION },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Interface A: `Authorization: Bearer <API key>`.' },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Interface B: `X-API-Key: <API key>`.' },
        },
      },
      security: [{ bearerAuth: [] }, { apiKeyHeader: [] }],
    },
    // The `/v1` copies are the same operations: the document lists the `/api/v1` ones once.
    transform: ({ schema, url, route }) => {
      const hidden = url.startsWith('/v1/') || url.startsWith('/docs') || url === '/metrics';
      const security = route.config && (route.config as { auth?: string }).auth === 'none' ? { security: [] } : {};
      const method = (Array.isArray(route.method) ? route.method[0] : route.method) as string;
      const operationId = (schema as { operationId?: string } | undefined)?.operationId ?? operationIdOf(method, url);
      return { schema: { ...schema, ...security, operationId, ...(hidden ? { hide: true } : {}) } as typeof schema, url };
    },
    // @fastify/swagger marks every request body required; the actions whose body is optional
    // (OPTIONAL_BODY, src/api/optionalBody.ts) take none, and the document must say so (Prism
    // and generated clients hold a request to it).
    transformObject: (documents) => {
      const document = 'openapiObject' in documents ? documents.openapiObject : documents.swaggerObject;
      for (const operations of Object.values((document as { paths?: Record<string, Record<string, OpenApiOperation>> }).paths ?? {})) {
        for (const operation of Object.values(operations)) {
          if (operation['x-body-optional'] && operation.requestBody) operation.requestBody.required = false;
        }
      }
      return document;
    },
  });
  app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    transformStaticCSP: docsCsp,
    validatorUrl: false,
    uiConfig: { url: '/api/v1/openapi.json' } as Record<string, unknown>,
    theme: { title: 'svc gateway API' },
    logo: { type: 'image/svg+xml', content: Buffer.from(DOCS_LOGO), href: '/docs', target: '_self' },
  });
}

/** The reference's top-bar mark: the project's name as text (drawn here, no external font or file), in place of Swagger's logo. */
const DOCS_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="220" height="40" viewBox="0 0 220 40" role="img" aria-label="svc gateway API"><text x="0" y="28" font-family="system-ui, sans-serif" font-size="24" font-weight="700" fill="#ffffff">svc gateway</text><text x="150" y="28" font-family="system-ui, sans-serif" font-size="16" fill="#b8c4ff">API</text></svg>`;

/**
 * The CSP of /docs (issue 27: no violations in the console). From @fastify/swagger-ui's: scripts
 * stay 'self' only; styles drop \`https:\` (nothing is loaded from elsewhere) but allow inline
 * style (Swagger UI's React tree writes \`style\` attributes through markup, which a hash cannot
 * cover: they change as operations open); the validator badge (validator.swagger.io) is off, so
 * its host leaves img-src. The page holds no secret of the gateway (a key typed into "Authorize"
 * stays in the browser and goes only to this origin: connect-src 'self').
 */
export function docsCsp(header: string): string {
  return header
    .replace(/style-src [^;]*/, "style-src 'self' 'unsafe-inline'")
    .replace(/font-src [^;]*/, "font-src 'self' data:")
    .replace(' validator.swagger.io', '');
}

/** What the transform above reads of an operation. */
interface OpenApiOperation {
  'x-body-optional'?: boolean;
  requestBody?: { required?: boolean };
}

/**
 * A stable operationId for client generators when a route names none: method and path in
 * camel case, `GET /api/v1/payments/:id` -> `getPaymentsById`.
 */
function operationIdOf(method: string, url: string): string {
  const words = url
    .replace(/^\/(api\/)?v1\//, '/')
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `by-${segment.slice(1)}` : segment))
    .flatMap((segment) => segment.split(/[^A-Za-z0-9]+/))
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((word) => word[0]!.toUpperCase() + word.slice(1))].join('');
}

/**
 * `GET /openapi.json` under each prefix: the document, no authentication, with this gateway's
 * public URL as its server (read per request: the daemon learns its address once listening), so
 * generated clients know where to call. Paths carry the `/api/v1` prefix; `/v1` serves the same.
 */
export function openApiRoutes(app: FastifyInstance, deps: Pick<ApiDeps, 'config'>): void {
  app.get('/openapi.json', { config: { auth: 'none', rateLimit: 'none' }, schema: { hide: true } }, async () => ({
    ...app.swagger(),
    servers: [{ url: deps.config.publicUrl, description: 'This gateway. Every path is also served with `/v1` in place of `/api/v1`.' }],
  }));
}
