import { describe, expect, test } from 'vitest';
import { getAddress } from 'viem';
import { currencyDecimals, loadChains, tokensFor } from '../../src/internal/chains.ts';
import { CHAIN_NAMES } from '../../src/internal/config.ts';

describe('chains/*.json', () => {
  const chains = loadChains();

  test('one valid config per chain, with the production chain ids', () => {
    expect(Object.keys(chains).sort()).toEqual([...CHAIN_NAMES].sort());
    expect(Object.fromEntries(Object.values(chains).map((chain) => [chain.name, chain.chainId]))).toEqual({
      polygon: 137,
      base: 8453,
      bsc: 56,
      arbitrum: 42161,
      optimism: 10,
      solana: 'mainnet-beta',
    });
  });

  test('USDT and USDC have 18 decimals on bsc and 6 elsewhere', () => {
    for (const chain of Object.values(chains)) {
      for (const currency of ['USDC', 'USDT'] as const) {
        const decimals = currencyDecimals(chain, currency);
        if (decimals !== undefined) expect(decimals).toBe(chain.name === 'bsc' ? 18 : 6);
      }
    }
  });

  test('EVM token addresses are EIP-55 checksummed', () => {
    for (const chain of Object.values(chains).filter((chain) => chain.kind === 'evm')) {
      for (const token of chain.tokens) expect(token.address).toBe(getAddress(token.address));
    }
  });

  test('bridged tokens are accepted only on request; base offers no USDT by default', () => {
    expect(tokensFor(chains.polygon, 'USDC').map((token) => token.symbol)).toEqual(['USDC']);
    expect(tokensFor(chains.polygon, 'USDC', { includeBridged: true }).map((token) => token.symbol)).toEqual(['USDC', 'USDC.e']);
    expect(tokensFor(chains.base, 'USDT')).toEqual([]);
    expect(tokensFor(chains.solana, 'USDC').map((token) => token.address)).toEqual(['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v']);
  });
});
