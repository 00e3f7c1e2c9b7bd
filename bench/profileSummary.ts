/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time by package or source file, and the
 * heaviest functions, so a bench's profile can be quoted in docs/benchmarks.md.
 *
 *   npx tsx bench/profileSummary.ts <file.cpuprofile> [--top 25]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
const profile = JSON.parse(fs.readFileSync(positionals[0]!, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, index) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
const total = [...selfMicros.values()].reduce((sum, micros) => sum + micros, 0);

/** `node_modules/<package>` for dependencies, the path under the project for our files, the bucket name otherwise. */
function where(url: string, name: string): string {
  if (!url) return `(${name || 'native'})`;
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1]!;
  if (url.startsWith('node:')) return url;
  const own = /\/(src|bench)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

const byPlace = new Map<string, number>();
const byFunction = new Map<string, number>();
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
for (const [id, micros] of selfMicros) {
  const { callFrame } = nodes.get(id)!;
  const place = where(callFrame.url, callFrame.functionName);
  byPlace.set(place, (byPlace.get(place) ?? 0) + micros);
  const fn = `${callFrame.functionName || '(anonymous)'} ${place}:${callFrame.lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
}
const top = Number(values.top);
const show = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * micros) / total).toFixed(1).padStart(5)} %  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  }
};
console.log(`${positionals[0]}: ${(total / 1e6).toFixed(1)} s sampled`);
show('self time by package or file', byPlace);
show('self time by function', byFunction);
