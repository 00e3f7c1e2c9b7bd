import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { createBranchTracker } from '../../../src/ingest/evm/reorg.ts';
import { createIngestMetrics } from '../../../src/ingest/metrics.ts';
import type { BlockHeader } from '../../../src/ingest/evm/persist.ts';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';

/**
 * The reorg bookkeeping on its own, against a scripted node: which blocks the node has is the
 * only input, so two reorgs in a row (the second found before the first one's rewind committed)
 * can be set up exactly. The anvil tests (reorg.test.ts) cover the same code through the ingester.
 */
const header = (number: bigint, branch: string): BlockHeader => ({
  number,
  hash: `0x${branch}${number.toString(16).padStart(8, '0')}`,
  parentHash: `0x${branch}${(number - 1n).toString(16).padStart(8, '0')}`,
  timestamp: number,
  logsBloom: '0x',
});

function setup(stored: bigint[], finality: { node?: bigint; recorded?: bigint } = {}) {
  /** The node's chain: block number -> branch letter; blocks not listed are on branch "a". */
  const node = new Map<bigint, string>();
  const metrics = createIngestMetrics(createMetricsRegistry({ defaultMetrics: false }));
  /** What the tracker logged, one object a line. */
  const logs: Record<string, unknown>[] = [];
  const tracker = createBranchTracker({
    getHeader: async (number) => header(number, node.get(number) ?? 'a'),
    readFinalized: async () => finality.node ?? 0n,
    confirmedDepth: 10n,
    metrics,
    labels: { chain: 'polygon' },
    logger: pino({ level: 'warn' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
  });
  tracker.load(new Map(stored.map((number) => [number, header(number, 'a').hash])), finality.recorded);
  return { node, tracker, metrics, logs };
}

describe('branch tracker', () => {
  test('a reorg of blocks 8-10 while 1-10 are stored: ancestor 7, rewind of depth 3', async () => {
    const { node, tracker } = setup([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
    for (const number of [8n, 9n, 10n]) node.set(number, 'b');
    expect(await tracker.reconcile(10n, 10n)).toBe(7n);
    expect(tracker.pendingRewind).toEqual({ to: 7n, depth: 3, beyondRule: null });
    expect(tracker.size).toBe(7);
  });

  test('a second, deeper reorg before the first rewind commits: one rewind to the lower ancestor, depth counted from the first tip', async () => {
    const { node, tracker } = setup([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
    for (const number of [8n, 9n, 10n]) node.set(number, 'b');
    const first = await tracker.reconcile(10n, 10n);
    // The node switches again, now from block 6: the checkpoint stands at the first ancestor (7).
    for (const number of [6n, 7n, 8n, 9n, 10n]) node.set(number, 'c');
    expect(await tracker.reconcile(first, first)).toBe(5n);
    // Blocks 6..10 of the first tip are gone: depth 5, not 3 + 2 counted twice.
    expect(tracker.pendingRewind).toEqual({ to: 5n, depth: 5, beyondRule: null });
  });

  test('a reorg deeper than the confirmation depth is judged on the combined depth', async () => {
    const stored = Array.from({ length: 20 }, (_, i) => BigInt(i + 1));
    const { node, tracker, metrics } = setup(stored);
    for (let n = 14n; n <= 20n; n++) node.set(n, 'b');
    const first = await tracker.reconcile(20n, 20n);
    expect(tracker.pendingRewind).toEqual({ to: 13n, depth: 7, beyondRule: null });
    for (let n = 9n; n <= 20n; n++) node.set(n, 'c');
    expect(await tracker.reconcile(first, first)).toBe(8n);
    // Each walk alone (7, then 5) is within the rule; the chain moved 12 blocks under the tip.
    expect(tracker.pendingRewind).toEqual({ to: 8n, depth: 12, beyondRule: 'confirmed' });
    // Reported as one reorg: one alert, and one reorg of depth 12 once the rewind is applied.
    const count = async (name: string) => (await metrics[name as 'reorgs'].get()).values.reduce((sum, value) => sum + value.value, 0);
    expect(await count('deepReorgs')).toBe(1);
    expect(await count('reorgs')).toBe(0);
    tracker.committed({ rewind: tracker.pendingRewind, headers: [], finalized: null });
    expect(await count('reorgs')).toBe(1);
    const depth = (await metrics.reorgDepth.get()).values.find((value) => value.metricName === 'svc_ingest_reorg_depth_blocks_sum');
    expect(depth?.value).toBe(12);
  });

  test('finality is what the gateway recorded: below the node’s finalized block of now only, a plain reorg; below the recorded one, the incident', async () => {
    const stored = [5n, 6n, 7n, 8n, 9n, 10n];
    // The ingester lagged: the node finalized block 9 of the new branch, the gateway had recorded 5.
    const lagged = setup(stored, { node: 9n, recorded: 5n });
    for (const number of [8n, 9n, 10n]) lagged.node.set(number, 'b');
    expect(await lagged.tracker.reconcile(10n, 10n)).toBe(7n);
    expect(lagged.tracker.pendingRewind).toEqual({ to: 7n, depth: 3, beyondRule: null });
    // The gateway had recorded block 8 final (and settled what it held): the same reorg is the incident.
    const reported = setup(stored, { node: 9n, recorded: 8n });
    for (const number of [8n, 9n, 10n]) reported.node.set(number, 'b');
    await reported.tracker.reconcile(10n, 10n);
    expect(reported.tracker.pendingRewind).toEqual({ to: 7n, depth: 3, beyondRule: 'finalized' });
    // A commit's finalized block raises the recorded one: the incident's log names 8, not the 5
    // loaded. (The rule is `finalized` here with or without the raise: the commit also pruned the
    // blocks up to 8, so the walk runs out of stored blocks.)
    const later = setup(stored, { node: 9n, recorded: 5n });
    later.tracker.committed({ rewind: undefined, headers: [], finalized: 8n });
    for (const number of [9n, 10n]) later.node.set(number, 'b');
    await later.tracker.reconcile(10n, 10n);
    expect(later.tracker.pendingRewind?.beyondRule).toBe('finalized');
    expect(later.logs.find((line) => String(line.msg).startsWith('Reorg reaches below the finalized block'))).toMatchObject({
      recorded_finalized_block: '8',
      finalized_block: '9',
    });
  });
});
