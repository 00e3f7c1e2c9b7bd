import fs from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { sha256Hex } from '../internal/crypto.ts';

const require = createRequire(import.meta.url);

/**
 * Every static file the dashboard serves, by the name in its URL: its own CSS and script (beside
 * this file in assets/, copied into dist/ by scripts/build.mjs) and the libraries from
 * node_modules (htmx 2 for partial page updates, uPlot for charts). Read once at start; nothing
 * comes from a CDN, and a name not listed here is a 404, so no path ever reaches the file system.
 */
const FILES: Record<AssetName, { path: string; type: string }> = {
  'dashboard.css': { path: fileURLToPath(new URL('./assets/dashboard.css', import.meta.url)), type: 'text/css; charset=utf-8' },
  'dashboard.js': { path: fileURLToPath(new URL('./assets/dashboard.js', import.meta.url)), type: 'text/javascript; charset=utf-8' },
  'payments.css': { path: fileURLToPath(new URL('./assets/payments.css', import.meta.url)), type: 'text/css; charset=utf-8' },
  'payments.js': { path: fileURLToPath(new URL('./assets/payments.js', import.meta.url)), type: 'text/javascript; charset=utf-8' },
  'refunds.js': { path: fileURLToPath(new URL('./assets/refunds.js', import.meta.url)), type: 'text/javascript; charset=utf-8' },
  'settings.js': { path: fileURLToPath(new URL('./assets/settings.js', import.meta.url)), type: 'text/javascript; charset=utf-8' },
  'htmx.min.js': { path: require.resolve('htmx.org/dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.min.js': { path: require.resolve('uplot/dist/uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.min.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

/** A file name of {@link FILES}: add a line there for a new script or stylesheet. */
export type AssetName =
  | 'dashboard.css'
  | 'dashboard.js'
  | 'payments.css'
  | 'payments.js'
  | 'refunds.js'
  | 'settings.js'
  | 'htmx.min.js'
  | 'uplot.min.js'
  | 'uplot.min.css';

interface Asset {
  body: Buffer;
  type: string;
  version: string;
}

let loaded: Map<string, Asset> | undefined;
function assets(): Map<string, Asset> {
  loaded ??= new Map(
    Object.entries(FILES).map(([name, file]) => {
      const body = fs.readFileSync(file.path);
      return [name, { body, type: file.type, version: sha256Hex(body).slice(0, 12) }];
    }),
  );
  return loaded;
}

/**
 * The URL of an asset, with its content hash in the query: it may be cached for a year, and a new
 * release changes the URL (pages are `no-store`, so they always name the current one).
 */
export function assetUrl(name: string): string {
  const asset = assets().get(name);
  if (!asset) throw new Error(`unknown dashboard asset ${name}`);
  return `/dashboard/assets/${name}?v=${asset.version}`;
}

/** `GET /dashboard/assets/:name`: the listed files only. */
export function registerAssets(app: FastifyInstance): void {
  assets();
  app.get<{ Params: { name: string } }>(
    '/assets/:name',
    { config: { auth: 'none', rateLimit: 'dashboard' }, schema: { hide: true } as never },
    async (request, reply) => {
      const asset = assets().get(request.params.name);
      if (!asset) return reply.status(404).type('text/plain; charset=utf-8').send('not found');
      reply.header('Cache-Control', 'public, max-age=31536000, immutable');
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Cross-Origin-Resource-Policy', 'same-origin');
      return reply.type(asset.type).send(asset.body);
    },
  );
}
