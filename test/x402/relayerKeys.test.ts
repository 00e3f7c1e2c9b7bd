import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/internal/config.ts';
import { ConfigError } from '../../src/internal/errors.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createRelayers } from '../../src/x402/index.ts';
import { getBase58Decoder, getBase58Encoder } from '@solana/kit';
import { newSolanaKeypair } from '../helpers/svmPayments.ts';

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
    expect(problems.join('\n')).toContain('SVC_SOLANA_RELAYER_KEY: must be a Solana keypair');
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

describe('the Solana fee payer key (SVC_SOLANA_RELAYER_KEY)', () => {
  const { base58, address } = newSolanaKeypair();
  const bytes = getBase58Encoder().encode(base58);

  test("a keypair as base58 text or solana-keygen's JSON array (the _FILE form); its address is its public half", () => {
    const fromText = loadConfig({ SVC_SOLANA_RELAYER_KEY: base58 }).solanaFeePayerKey!;
    expect(getBase58Decoder().decode(fromText.subarray(32))).toBe(address);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-solana-'));
    const file = path.join(dir, 'id.json');
    fs.writeFileSync(file, JSON.stringify([...bytes]));
    expect(loadConfig({ SVC_SOLANA_RELAYER_KEY_FILE: file }).solanaFeePayerKey).toEqual(fromText);
  });

  test('a keypair whose public half is not its seed’s, or of another length, is refused without repeating it', () => {
    const tampered = Uint8Array.from(bytes);
    tampered[63] = tampered[63]! ^ 1;
    const problems = [
      ...problemsOf({ SVC_SOLANA_RELAYER_KEY: getBase58Decoder().decode(tampered) }),
      ...problemsOf({ SVC_SOLANA_RELAYER_KEY: getBase58Decoder().decode(bytes.subarray(0, 32)) }),
    ];
    expect(problems).toEqual([
      "SVC_SOLANA_RELAYER_KEY: is not a keypair: its last 32 bytes are not its seed's public key",
      'SVC_SOLANA_RELAYER_KEY: must be a Solana keypair of 64 bytes (seed and public key)',
    ]);
  });

  test('it is redacted from a config object that reaches a log line', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk) => lines.push(...String(chunk).trim().split('\n')));
    createLogger({ level: 'info', destination: stream }).info({ msg: 'Config', config: loadConfig({ SVC_SOLANA_RELAYER_KEY: base58 }) });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]).toContain('solanaFeePayerKey');
    expect(lines[0]).toContain('"solanaFeePayerKey":"[redacted]"');
    expect(lines[0]).not.toContain(String(bytes[0]) + ',' + String(bytes[1]) + ',');
  });
});

describe('x402 relayer keys from files (SVC_<CHAIN>_RELAYER_KEY_FILE)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-relayer-'));
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };

  test('the file’s content, trimmed, is the key; an empty file is no key', () => {
    const config = loadConfig({ SVC_POLYGON_RELAYER_KEY_FILE: write('polygon', `\n  ${KEY}\n`), SVC_BASE_RELAYER_KEY_FILE: write('base', '') });
    expect(config.relayerKeys).toEqual({ polygon: KEY });
  });

  test('both the variable and the file, a missing file, a bad key in it, or a file for a chain without relayers: clear errors that never repeat the key', () => {
    const problems = problemsOf({
      SVC_POLYGON_RELAYER_KEY: KEY,
      SVC_POLYGON_RELAYER_KEY_FILE: write('both', KEY),
      SVC_BASE_RELAYER_KEY_FILE: path.join(dir, 'missing'),
      SVC_ARBITRUM_RELAYER_KEY_FILE: write('bad', `0x${'cd'.repeat(31)}`),
      SVC_SOLANA_RELAYER_KEY_FILE: write('solana', KEY),
    });
    expect([...problems].sort()).toEqual(
      [
        'SVC_POLYGON_RELAYER_KEY and SVC_POLYGON_RELAYER_KEY_FILE are both set: set one (the _FILE form keeps the key out of the environment)',
        `SVC_BASE_RELAYER_KEY_FILE: cannot read ${path.join(dir, 'missing')} (ENOENT)`,
        "the file of SVC_SOLANA_RELAYER_KEY_FILE: must be a Solana keypair: base58 text of 64 bytes, or solana-keygen's JSON array",
        'the file of SVC_ARBITRUM_RELAYER_KEY_FILE: must be a 32-byte private key in hex (0x and 64 hex digits)',
      ].sort(),
    );
    expect(problems.join('\n')).not.toMatch(/abab|cdcd/);
  });
});
