/**
 * Regenerates everything in clients/ that is derived from the daemon: the OpenAPI snapshot,
 * the webhook vectors, and each library's generated files.
 *
 *   npx tsx clients/scripts/regenerate.ts            # write what changed
 *   npx tsx clients/scripts/regenerate.ts --check    # write nothing; exit 1 listing what differs
 *
 * test/clients/drift.test.ts runs the check, so the clients cannot drift from the daemon. The
 * generator is this folder (TypeScript run by the repository's pinned tsx, no other tool): the
 * model (model.ts) and one emitter per language (emit-node.ts, emit-python.ts, emit-go.ts, emit-rust.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildModel } from './model.ts';
import { emitNodeResources, emitNodeTypes } from './emit-node.ts';
import { emitPythonResources, emitPythonTypes } from './emit-python.ts';
import { emitGoResources, emitGoTypes } from './emit-go.ts';
import { emitRustResources, emitRustTypes } from './emit-rust.ts';
import { fetchOpenApiDocument, SNAPSHOT_PATH, snapshotText } from './snapshot-openapi.ts';
import { VECTORS_PATH, vectorsText } from './webhook-vectors.ts';
import { CLIENTS_DIR, writeIfChanged } from './files.ts';

/** Every file generated from the OpenAPI document, by path relative to clients/. */
export function generatedFiles(document: unknown): Map<string, string> {
  const model = buildModel(document as Parameters<typeof buildModel>[0]);
  return new Map([
    ['node/src/generated/types.ts', emitNodeTypes(model)],
    ['node/src/generated/resources.ts', emitNodeResources(model)],
    ['python/svc_gateway/_generated/types.py', emitPythonTypes(model)],
    ['python/svc_gateway/_generated/resources.py', emitPythonResources(model)],
    ['go/types_gen.go', emitGoTypes(model)],
    ['go/resources_gen.go', emitGoResources(model)],
    ['rust/src/generated/types.rs', emitRustTypes(model)],
    ['rust/src/generated/resources.rs', emitRustResources(model)],
  ]);
}

/** Everything regenerate writes, by absolute path, derived afresh from the daemon's code. */
export async function everything(): Promise<Map<string, string>> {
  const document = await fetchOpenApiDocument();
  const files = new Map<string, string>([
    [SNAPSHOT_PATH, snapshotText(document)],
    [VECTORS_PATH, vectorsText()],
  ]);
  for (const [relative, text] of generatedFiles(document)) files.set(path.join(CLIENTS_DIR, relative), text);
  return files;
}

/** The files whose content on disk differs from `files` (missing ones included), relative to the repository. */
export function differences(files: Map<string, string>): string[] {
  return [...files]
    .filter(([file, text]) => !fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text)
    .map(([file]) => path.relative(path.dirname(CLIENTS_DIR), file));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = await everything();
  if (process.argv.includes('--check')) {
    const stale = differences(files);
    if (stale.length > 0) {
      console.error(`out of date (run npx tsx clients/scripts/regenerate.ts):\n  ${stale.join('\n  ')}`);
      process.exit(1);
    }
    console.log('clients are up to date with the daemon');
  } else {
    for (const [file, text] of files) console.log(`${path.relative(process.cwd(), file)}: ${writeIfChanged(file, text) ? 'updated' : 'unchanged'}`);
  }
}
