import { hexToBytes, keccak256 } from 'viem';

/** The three bit positions (of 2048) an item sets in a block's `logsBloom` (yellow paper, M3:2048). */
export type BloomBits = readonly [number, number, number];

/** Bit positions of `item` (an address or a 32-byte topic, as hex). Precompute once per item. */
export function bloomBits(item: `0x${string}`): BloomBits {
  const hash = hexToBytes(keccak256(item));
  const bit = (i: number) => ((hash[i]! << 8) | hash[i + 1]!) & 2047;
  return [bit(0), bit(2), bit(4)];
}

/** Whether `bloom` may contain the item; `false` is certain, `true` may be a false positive. */
export function bloomHas(bloom: Uint8Array, bits: BloomBits): boolean {
  for (const index of bits) {
    const byte = bloom[255 - (index >> 3)]!;
    if ((byte & (1 << (index & 7))) === 0) return false;
  }
  return true;
}

/**
 * Whether a block with this bloom may hold a Transfer log of one of `tokens` to one of
 * `recipients` (recipients are skipped when `undefined`, i.e. too many to test one by one).
 */
export function blockMayHaveTransfers(
  logsBloom: `0x${string}`,
  filter: { topic: BloomBits; tokens: readonly BloomBits[]; recipients: readonly BloomBits[] | undefined },
): boolean {
  const bloom = hexToBytes(logsBloom);
  if (bloom.length !== 256) return true;
  if (!bloomHas(bloom, filter.topic)) return false;
  if (!filter.tokens.some((bits) => bloomHas(bloom, bits))) return false;
  if (filter.recipients && !filter.recipients.some((bits) => bloomHas(bloom, bits))) return false;
  return true;
}
