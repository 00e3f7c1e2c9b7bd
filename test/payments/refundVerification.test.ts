import { describe, expect, test } from 'vitest';
import { canonicalTxHash, checkRefundTransaction } from '../../src/payments/refundVerification.ts';
import type { Refund } from '../../src/payments/refund.ts';
import type { LookedUpTransaction } from '../../src/ingest/lookup.ts';

/**
 * The refund-transaction rule on its own (the API and anvil tests drive it through the routes):
 * here the chains whose confirmation rule differs, solana's finalized slots especially, which no
 * local validator can exercise.
 */
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const PAY_TO = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';
const CUSTOMER = '4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T';
const SIGNATURE = '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW';

const refund = {
  id: 'rfd_1',
  chain: 'solana',
  currency: 'USDC',
  decimals: 6,
  amount: 5_000_000n,
  toAddress: CUSTOMER,
} as Refund;
const payment = { payTo: PAY_TO, tokenAddresses: [MINT] };
const mined = (slot: bigint, movements: { from: string | null; to: string; amount: bigint; token?: string }[]): LookedUpTransaction => ({
  found: true,
  chain: 'solana',
  failed: false,
  blockNumber: slot,
  blockTime: null,
  movements: movements.map((movement, index) => ({ index, token: movement.token ?? MINT, ...movement })),
});

describe('a solana refund transaction', () => {
  test('completes the refund once its slot is finalized, not before', () => {
    const tx = mined(500n, [{ from: PAY_TO, to: CUSTOMER, amount: 5_000_000n }]);
    expect(() => checkRefundTransaction(refund, payment, SIGNATURE, tx, { headBlock: 520n, finalizedBlock: 499n })).toThrow(
      `transaction ${SIGNATURE} pays this refund but is not confirmed yet: complete the refund again once it is finalized`,
    );
    expect(checkRefundTransaction(refund, payment, SIGNATURE, tx, { headBlock: 540n, finalizedBlock: 500n })).toEqual({
      refundId: 'rfd_1',
      txHash: SIGNATURE,
      matchingTransfers: 1,
      verifiedOn: 'chain',
    });
  });

  test('another mint, an unknown sender or another amount does not pay it, and the message says what the transaction moves', () => {
    const head = { headBlock: 900n, finalizedBlock: 900n };
    const otherMint = mined(500n, [{ from: PAY_TO, to: CUSTOMER, amount: 5_000_000n, token: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB' }]);
    expect(() => checkRefundTransaction(refund, payment, SIGNATURE, otherMint, head)).toThrow("it holds no USDC transfer of this payment's token");
    const unknownSender = mined(500n, [{ from: null, to: CUSTOMER, amount: 5_000_000n }]);
    expect(() => checkRefundTransaction(refund, payment, SIGNATURE, unknownSender, head)).toThrow(`it transfers 5 USDC from an unknown sender to ${CUSTOMER}`);
    const short = mined(500n, [{ from: PAY_TO, to: CUSTOMER, amount: 4_999_999n }]);
    expect(() => checkRefundTransaction(refund, payment, SIGNATURE, short, head)).toThrow(`it transfers 4.999999 USDC from ${PAY_TO} to ${CUSTOMER}`);
  });

  test('hashes are checked for their chain: base58 64-byte signatures on solana, 0x + 64 hex (lower-cased) on EVM', () => {
    expect(canonicalTxHash('solana', ` ${SIGNATURE} `)).toBe(SIGNATURE);
    expect(() => canonicalTxHash('solana', `0x${'ab'.repeat(32)}`)).toThrow('txHash must be a base58 transaction signature (64 bytes)');
    expect(canonicalTxHash('polygon', `0x${'AB'.repeat(32)}`)).toBe(`0x${'ab'.repeat(32)}`);
    expect(() => canonicalTxHash('polygon', SIGNATURE)).toThrow('txHash must be 0x followed by 64 hex digits');
  });
});
