import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/internal/config.ts';
import { ConfigError } from '../../src/internal/errors.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createRelayers } from '../../src/x402/index.ts';

/** SVC_<CHAIN>_RELAYER_KEY: read from the environment only, never echoed, never logged (docs/security.md). */
const KEY = `0x${'ab'.repeat(32)}`;

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('x402 relayer keys', () => {
  test('a key per EVM chain with an EIP-3009 token; a bad one names the variable and never repeats the value', () => {
    expect(loadConfig({ SVC_POLYGON_RELAYER_KEY: KEY.toUpperCase().replace('0X', '0x'), SVC_BASE_RELAYER_KEY: KEY.slice(2) }).relayerKeys).toEqual({
      polygon: KEY,
      base: KEY,
    });
    const bad = `0x${'cd'.repeat(31)}`;
    const problems = problemsOf({ SVC_ARBITRUM_RELAYER_KEY: bad, SVC_BSC_RELAYER_KEY: KEY, SVC_SOLANA_RELAYER_KEY: KEY });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('SVC_SOLANA_RELAYER_KEY');
    expect(problems.join('\n')).toContain('SVC_ARBITRUM_RELAYER_KEY: must be a 32-byte private key');
    expect(problems.join('\n')).not.toContain('cdcd');
    expect(problems.join('\n')).not.toContain('abab');
  });

  test('bsc takes a relayer key (it pays deposit sweeps there; bsc has no EIP-3009 token, so no x402 offer uses it)', () => {
    expect(loadConfig({ SVC_BSC_RELAYER_KEY: KEY }).relayerKeys).toEqual({ bsc: KEY });
  });

  test('a relayer exists only where a key and an RPC URL are both set', () => {
    const config = loadConfig({ SVC_POLYGON_RELAYER_KEY: KEY, SVC_POLYGON_RPC_URL: 'http://rpc.invalid/polygon', SVC_BASE_RELAYER_KEY: KEY });
    const relayers = createRelayers({ config, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
    expect(Object.keys(relayers)).toEqual(['polygon']);
    expect(relayers.polygon!.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  });

  test('a config object or payment header that reaches a log line is redacted', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk) => lines.push(...String(chunk).trim().split('\n')));
    const logger = createLogger({ level: 'info', destination: stream });
    logger.info({ msg: 'Config', config: loadConfig({ SVC_POLYGON_RELAYER_KEY: KEY }), headers: { 'payment-signature': 'eyJzaWduYXR1cmUiOiIweGFiIn0=' } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]).not.toContain('abab');
    expect(lines[0]).not.toContain('eyJzaWduYXR1cmUi');
  });
});
