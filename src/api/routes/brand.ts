import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { auditApiChange } from '../audit.ts';
import { authOf } from '../auth.ts';
import { forbidden, notFound } from '../../internal/errors.ts';
import {
  getMerchantBrand,
  LOGO_TYPES,
  MAX_LOGO_BYTES,
  MAX_LOGO_SIDE,
  removeMerchantLogo,
  setMerchantBrand,
  setMerchantLogo,
  type MerchantBrand,
} from '../../accounts/index.ts';
import { errorResponses, READ_ERRORS } from '../schemas.ts';

/**
 * The merchant's brand (issue 26), shown to customers on every checkout page and receipt:
 * `GET /brand`, `PATCH /brand` (display name, accent colour, support email and URL),
 * `POST /brand/logo` and `DELETE /brand/logo`. Changes need a live key with the write scope: the
 * brand is what live customers see (a support URL is a place they are sent to), so a test key,
 * handed to developers and CI, must not change it. Every change is audited.
 */

const BrandSchema = Type.Object(
  {
    name: Type.String({ description: 'Display name shown to customers.' }),
    accentColor: Type.Union([Type.String({ pattern: '^#[0-9a-f]{6}$' }), Type.Null()], { description: 'Accent colour `#rrggbb`, or null.' }),
    supportEmail: Type.Union([Type.String(), Type.Null()], { description: 'Support email shown on checkout and receipts, or null.' }),
    supportUrl: Type.Union([Type.String({ format: 'uri' }), Type.Null()], { description: 'Support page (https), or null.' }),
    logo: Type.Union([Type.Object({ sha256: Type.String() }, { additionalProperties: false }), Type.Null()], {
      description: 'The stored logo (its sha256), or null.',
    }),
  },
  { additionalProperties: false, description: "The merchant's brand." },
);

const UpdateBrandBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Display name, 1..200 characters.' })),
    accentColor: Type.Optional(
      Type.Union([Type.String({ maxLength: 7, description: '`#rrggbb`.' }), Type.Null()], { description: 'Accent colour `#rrggbb`; null clears it.' }),
    ),
    supportEmail: Type.Optional(Type.Union([Type.String({ maxLength: 254 }), Type.Null()], { description: 'Support email; null clears it.' })),
    supportUrl: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], { description: 'Support page, https; null clears it.' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

const LogoBody = Type.Object(
  {
    contentType: Type.Unsafe<string>({ type: 'string', enum: [...LOGO_TYPES], description: 'The declared type; the bytes must agree with it.' }),
    data: Type.String({
      minLength: 1,
      maxLength: Math.ceil(MAX_LOGO_BYTES / 3) * 4 + 4,
      description: 'The image, base64.',
      'x-error': `must be the base64 of at most ${MAX_LOGO_BYTES} bytes (256 KiB)`,
    }),
  },
  { additionalProperties: false },
);

/** The largest logo upload body: the base64 of {@link MAX_LOGO_BYTES} and a little JSON around it. */
const LOGO_BODY_LIMIT = Math.ceil(MAX_LOGO_BYTES / 3) * 4 + 1024;

const brandView = (brand: MerchantBrand) => ({
  name: brand.name,
  accentColor: brand.accentColor,
  supportEmail: brand.supportEmail,
  supportUrl: brand.supportUrl,
  logo: brand.logoSha256 ? { sha256: brand.logoSha256 } : null,
});

async function requireLiveKey(request: FastifyRequest): Promise<void> {
  if (!authOf(request).livemode) {
    throw forbidden('the brand is changed with a live API key (write scope): live customers see it, so a test key may read it but not change it');
  }
}

const BRAND_403 = 'A test key, or a key without the write scope: the brand is changed with a live key.';

export function brandRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const read = async (merchantId: string) => {
    const brand = await getMerchantBrand(deps.store, merchantId);
    if (!brand) throw notFound('merchant not found');
    return brandView(brand);
  };

  typed.get(
    '/brand',
    { schema: { tags: ['Brand'], summary: "Read the merchant's brand", response: { 200: BrandSchema, ...errorResponses(...READ_ERRORS) } } },
    async (request) => read(authOf(request).merchantId),
  );

  typed.patch(
    '/brand',
    {
      onRequest: requireLiveKey,
      schema: {
        tags: ['Brand'],
        summary: "Change the merchant's display name, accent colour or support contacts",
        description:
          'Omitted fields keep their value; null clears one (not the name). `accentColor` is `#rrggbb`; the checkout picks black or white text on it by contrast. `supportUrl` must be https. Audited (`merchant.brand_changed`).',
        body: UpdateBrandBody,
        response: { 200: BrandSchema, ...errorResponses(400, 401, 429, 503), 403: { ...errorResponses(403)[403], description: BRAND_403 } },
      },
    },
    async (request) => {
      const auth = authOf(request);
      await deps.store.transaction(async (sql) => {
        const { changed } = await setMerchantBrand(sql, auth.merchantId, request.body, { livemode: auth.livemode });
        if (Object.keys(changed).length > 0)
          await auditApiChange(sql, request, 'merchant.brand_changed', { target: auth.merchantId, livemode: null, details: changed });
      });
      return read(auth.merchantId);
    },
  );

  typed.post(
    '/brand/logo',
    {
      onRequest: requireLiveKey,
      bodyLimit: LOGO_BODY_LIMIT,
      schema: {
        tags: ['Brand'],
        summary: "Upload the merchant's logo",
        description: `PNG, JPEG or WebP, base64 in \`data\`, at most ${MAX_LOGO_BYTES / 1024} KiB and ${MAX_LOGO_SIDE}×${MAX_LOGO_SIDE} pixels. The bytes are checked by their signature: SVG, any other format, or bytes that are not the declared \`contentType\` are a 400. Replaces the previous logo. Audited (\`merchant.logo_set\`).`,
        body: LogoBody,
        response: { 200: BrandSchema, ...errorResponses(400, 401, 429, 503), 403: { ...errorResponses(403)[403], description: BRAND_403 } },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const bytes = Buffer.from(request.body.data, 'base64');
      await deps.store.transaction(async (sql) => {
        const stored = await setMerchantLogo(sql, auth.merchantId, bytes, request.body.contentType);
        await auditApiChange(sql, request, 'merchant.logo_set', {
          target: auth.merchantId,
          livemode: null,
          details: { contentType: stored.contentType, width: stored.width, height: stored.height, bytes: stored.size, sha256: stored.sha256 },
        });
      });
      return read(auth.merchantId);
    },
  );

  typed.delete(
    '/brand/logo',
    {
      onRequest: requireLiveKey,
      schema: {
        tags: ['Brand'],
        summary: "Remove the merchant's logo",
        description: 'Audited (`merchant.logo_removed`) when there was one.',
        response: { 200: BrandSchema, ...errorResponses(401, 429, 503), 403: { ...errorResponses(403)[403], description: BRAND_403 } },
      },
    },
    async (request) => {
      const auth = authOf(request);
      await deps.store.transaction(async (sql) => {
        if (await removeMerchantLogo(sql, auth.merchantId))
          await auditApiChange(sql, request, 'merchant.logo_removed', { target: auth.merchantId, livemode: null });
      });
      return read(auth.merchantId);
    },
  );
}
