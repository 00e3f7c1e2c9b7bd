import { rangeForDensity } from './transfers.ts';

/**
 * A catch-up longer than this starts with one range of this many blocks alone, whose densest block
 * sizes the next ranges ({@link rangeForDensity}; growth then stops there), once per process: on a dense chain the first
 * range at the configured size would be built in full by the node and refused (100,000 watched
 * transfers in 104 blocks: a 63 MB answer, as much node work as reading them all, before anything
 * could be committed). On a sparse chain it costs one round trip at start.
 */
export const PROBE_BLOCKS = 8n;
/** Successful ranges after which a refused range size may be tried again. */
const RANGE_CEILING_TTL = 100;

/**
 * How many blocks one `eth_getLogs` range asks for, adapted to what the provider accepts and how
 * dense the chain's logs are: halved (or cut to a measured fit) on a refusal, sized by the density
 * probe, doubled after `growAfter` full ranges in a row (never back to a refused size until
 * {@link RANGE_CEILING_TTL} ranges went well at smaller ones: density changes along a chain),
 * never above `maxRange`. The ingester (ingester.ts) plans its ranges with it.
 */
export interface RangeSize {
  /** The size the next range asks for. */
  readonly current: bigint;
  /** Whether the next range, with `remaining` blocks to catch up, should be the density probe. */
  probeFirst(remaining: bigint): boolean;
  /** The probe answered: `densestBlockLogs` (undefined when the bloom filter skipped it) sizes the ranges. */
  probed(densestBlockLogs: number | undefined): void;
  /** The provider refused a range of `size` blocks; `fits` is a size it said would fit, if it said one. */
  refused(size: bigint, fits: bigint | undefined): void;
  /** A cycle starts: the run of full ranges starts again. */
  startCycle(): void;
  /** A range of `blocks` blocks was fetched and handed to a commit. */
  fetched(blocks: bigint): void;
}

export function createRangeSize(params: { initialRange: number; maxRange: number; growAfter: number }): RangeSize {
  let size = BigInt(params.initialRange);
  const maxRange = BigInt(params.maxRange);
  /** The last range size a provider refused: ranges grow back only below it, until it expires. */
  let ceiling: bigint | undefined;
  let successes = 0;
  let fullInARow = 0;
  /** Whether a range's answer has told this process how dense the chain's logs are (see PROBE_BLOCKS). */
  let densityKnown = false;

  const capAt = (fits: bigint) => {
    if (fits < size) size = fits;
    // A measured fit is also where growth stops (the ceiling is the first size not to try).
    ceiling = fits + 1n;
    successes = 0;
  };

  return {
    get current() {
      return size;
    },
    probeFirst: (remaining) => !densityKnown && remaining > PROBE_BLOCKS && size > PROBE_BLOCKS,
    probed(densestBlockLogs) {
      densityKnown = true;
      const fits = densestBlockLogs === undefined ? undefined : rangeForDensity(densestBlockLogs);
      // Growth stops below the size expected not to fit, as after a measured refusal.
      if (fits !== undefined && fits < size) capAt(fits);
    },
    refused(refusedSize, fits) {
      const next = fits ?? (refusedSize / 2n > 0n ? refusedSize / 2n : 1n);
      if (next < size) size = next;
      ceiling = fits !== undefined ? fits + 1n : refusedSize;
      successes = 0;
    },
    startCycle() {
      fullInARow = 0;
    },
    fetched(blocks) {
      if (blocks < size) fullInARow = 0;
      else {
        successes += 1;
        fullInARow += 1;
      }
      if (ceiling !== undefined && successes >= RANGE_CEILING_TTL) ceiling = undefined;
      const limit = ceiling !== undefined && ceiling - 1n < maxRange ? ceiling - 1n : maxRange;
      if (fullInARow >= params.growAfter && size < limit) {
        size = size * 2n > limit ? limit : size * 2n;
        fullInARow = 0;
      }
    },
  };
}
