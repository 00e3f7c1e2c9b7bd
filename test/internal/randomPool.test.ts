import { expect, test } from 'vitest';
import { newId, randomBase62, takeRandomBytes } from '../../src/internal/crypto.ts';

/**
 * Random bytes come from a pool refilled from the CSPRNG (issue 28: one OpenSSL call per 4 KiB
 * instead of one per id or nonce). The pool must never hand the same bytes out twice, also
 * across a refill, and ids stay uniform base62.
 */
test('the pool hands out fresh bytes at every call, across refills, and serves requests larger than itself', () => {
  const seen = new Set<string>();
  // 300 × 64 bytes spans several refills of the 4 KiB pool.
  for (let i = 0; i < 300; i++) {
    const hex = Buffer.from(takeRandomBytes(64)).toString('hex');
    expect(seen.has(hex)).toBe(false);
    seen.add(hex);
  }
  expect(takeRandomBytes(10_000)).toHaveLength(10_000);
  // A request that does not fit in what is left of the pool refills it and is still fresh.
  const a = Buffer.from(takeRandomBytes(4000)).toString('hex');
  const b = Buffer.from(takeRandomBytes(4000)).toString('hex');
  expect(a).not.toBe(b);
});

test('ids and nonces are base62 of the asked length and do not repeat', () => {
  const ids = new Set(Array.from({ length: 20_000 }, () => newId('ses')));
  expect(ids.size).toBe(20_000);
  for (const id of [...ids].slice(0, 100)) expect(id).toMatch(/^ses_[0-9A-Za-z]{20}$/);
  expect(randomBase62(24)).toMatch(/^[0-9A-Za-z]{24}$/);
  // Every base62 character turns up: no part of the alphabet is lost to the sampling.
  const chars = new Set(Array.from({ length: 200 }, () => randomBase62(50)).join(''));
  expect(chars.size).toBe(62);
});
