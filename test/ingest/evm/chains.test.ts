import { describe, expect, test } from 'vitest';
import { loadChains, tokensFor } from '../../../src/internal/chains.ts';
import { rpcVariableNames } from '../../../src/internal/config.ts';

const chains = loadChains();
const EVM = { polygon: 137, base: 8453, bsc: 56, arbitrum: 42161, optimism: 10 } as const;

describe('chains/*.json for the EVM ingesters', () => {
  test.each(Object.entries(EVM))('%s: chain id, decimals, confirmation rule with sources, log ranges, RPC variables', (name, id) => {
    const chain = chains[name as keyof typeof EVM];
    expect(chain.chainId).toBe(id);
    for (const token of chain.tokens) expect(token.decimals).toBe(name === 'bsc' ? 18 : 6);
    expect(chain.confirmations.settled).toBe('finalized');
    expect(chain.confirmations.confirmed).toBeGreaterThanOrEqual(2);
    expect((chain.confirmations as { sources?: string[] }).sources?.length).toBeGreaterThan(0);
    expect(chain.logs!.initialRange).toBeLessThanOrEqual(chain.logs!.maxRange);
    // The first start backfills about an hour of blocks.
    expect(Math.round((chain.logs!.backfillBlocks * chain.blockTimeMs) / 60_000)).toBe(60);
    expect(chain.rpcEnv).toEqual(rpcVariableNames(chain.name));
  });

  test('bridged USDC.e counts only when accepted, on polygon, arbitrum and optimism', () => {
    for (const name of ['polygon', 'arbitrum', 'optimism'] as const) {
      const bridged = chains[name].tokens.find((token) => token.symbol === 'USDC.e')!;
      expect(bridged).toMatchObject({ variant: 'bridged', acceptedByDefault: false });
      expect(tokensFor(chains[name], 'USDC').map((token) => token.symbol)).toEqual(['USDC']);
      expect(tokensFor(chains[name], 'USDC', { includeBridged: true }).map((token) => token.symbol)).toEqual(['USDC', 'USDC.e']);
    }
  });

  test('optimism offers both USDT and USDT0; base offers no USDT unless configured', () => {
    expect(
      tokensFor(chains.optimism, 'USDT')
        .map((token) => token.symbol)
        .sort(),
    ).toEqual(['USDT', 'USDT0']);
    expect(tokensFor(chains.base, 'USDT')).toEqual([]);
  });
});
