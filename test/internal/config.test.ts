import { describe, expect, test } from 'vitest';
import { loadConfig, liveChains } from '../../src/internal/config.ts';
import { ConfigError } from '../../src/internal/errors.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig()', () => {
  test('defaults: port 8080 on 127.0.0.1, embedded Postgres, no live chain', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.host).toBe('127.0.0.1');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.publicUrl).toBe('http://127.0.0.1:8080');
    expect(config.webhookAllowPrivate).toBe(false);
    expect(config.webhookAllowPrivateSandbox).toBe('loopback');
    expect(config.logLevel).toBe('info');
    expect(config.monitorWindowSeconds).toBe(86400);
    expect(liveChains(config)).toEqual([]);
  });

  test('reads every documented variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/svc',
      SVC_PUBLIC_URL: 'https://pay.example.com/',
      SVC_POLYGON_RPC_URL: 'https://a.example/rpc, https://b.example/rpc',
      SVC_POLYGON_WS_URL: 'wss://a.example/ws',
      SVC_SOLANA_RPC_URL: 'https://sol.example',
      SVC_WEBHOOK_ALLOW_PRIVATE: 'yes',
      LOG_LEVEL: 'debug',
      SVC_ENCRYPTION_KEY: 'ab'.repeat(32),
    });
    expect(config.port).toBe(9000);
    expect(config.databaseUrl).toBe('postgres://u:p@db:5432/svc');
    expect(config.publicUrl).toBe('https://pay.example.com');
    expect(config.rpc.polygon).toEqual({ http: ['https://a.example/rpc', 'https://b.example/rpc'], ws: ['wss://a.example/ws'] });
    expect(config.rpc.base).toEqual({ http: [], ws: [] });
    expect(liveChains(config)).toEqual(['polygon', 'solana']);
    expect(config.webhookAllowPrivate).toBe(true);
    expect(config.webhookAllowPrivateSandbox).toBe(true);
    expect(loadConfig({ SVC_WEBHOOK_ALLOW_PRIVATE: 'false' })).toMatchObject({ webhookAllowPrivate: false, webhookAllowPrivateSandbox: false });
    // A deployed (stateless) gateway gives test keys no loopback unless the operator says so.
    const deployed = { SVC_STATELESS: 'true', DATABASE_URL: 'postgres://db/svc', SVC_ENCRYPTION_KEY: '44'.repeat(32) };
    expect(loadConfig(deployed)).toMatchObject({ webhookAllowPrivate: false, webhookAllowPrivateSandbox: false });
    expect(loadConfig({ ...deployed, SVC_WEBHOOK_ALLOW_PRIVATE: 'sandbox' })).toMatchObject({ webhookAllowPrivateSandbox: 'loopback' });
    expect(config.logLevel).toBe('debug');
    expect(config.encryptionKey).toEqual(Buffer.alloc(32, 0xab));
  });

  test('a bad value names the variable and says what is wrong', () => {
    expect(problemsOf({ PORT: 'eighty' })).toEqual(['PORT="eighty": must be an integer from 0 to 65535 (0 picks a free port)']);
    expect(problemsOf({ PORT: '70000' })[0]).toMatch(/^PORT="70000"/);
    expect(problemsOf({ DATABASE_URL: 'mysql://x' })).toEqual(['DATABASE_URL="mysql://x": must be a postgres:// connection URL']);
    expect(problemsOf({ SVC_PUBLIC_URL: 'ftp://x' })).toEqual(['SVC_PUBLIC_URL="ftp://x": must use http: or https:, not ftp:']);
    expect(problemsOf({ SVC_BSC_RPC_URL: 'not a url' })).toEqual(['SVC_BSC_RPC_URL="not a url": must be an absolute http/https URL']);
    expect(problemsOf({ SVC_BASE_WS_URL: 'https://x' })).toEqual(['SVC_BASE_WS_URL="https://x": must use ws: or wss:, not https:']);
    expect(problemsOf({ SVC_WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toEqual([
      'SVC_WEBHOOK_ALLOW_PRIVATE="maybe": must be sandbox, true or false (also 1, 0, yes, no)',
    ]);
    expect(problemsOf({ LOG_LEVEL: 'loud' })).toEqual(['LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent']);
    expect(problemsOf({ SVC_ENCRYPTION_KEY: 'short' })).toEqual(['SVC_ENCRYPTION_KEY="short": must be 32 bytes, as 64 hex characters or base64']);
  });

  test('every bad variable is reported at once', () => {
    const problems = problemsOf({ PORT: '-1', LOG_LEVEL: 'x', SVC_MONITOR_WINDOW_SECONDS: '1.5' });
    expect(problems.map((problem) => problem.split('=')[0])).toEqual(['PORT', 'LOG_LEVEL', 'SVC_MONITOR_WINDOW_SECONDS']);
  });
});

describe('the deposit sweeper variables', () => {
  test('defaults: on, every 5 minutes, 1 token minimum, a day, 50 per sweep; values as given', () => {
    expect(loadConfig({}).sweeper).toEqual({ enabled: true, intervalMs: 300_000, minimum: { USDC: '1', USDT: '1' }, maxAgeSeconds: 86_400, batch: 50 });
    const config = loadConfig({
      SVC_DEPOSIT_SWEEP: 'false',
      SVC_DEPOSIT_SWEEP_INTERVAL_SECONDS: '60',
      SVC_DEPOSIT_SWEEP_MIN_USDC: '2.5',
      SVC_DEPOSIT_SWEEP_MIN_USDT: '0',
      SVC_DEPOSIT_SWEEP_MAX_AGE_SECONDS: '3600',
      SVC_DEPOSIT_SWEEP_BATCH: '200',
    });
    expect(config.sweeper).toEqual({ enabled: false, intervalMs: 60_000, minimum: { USDC: '2.5', USDT: '0' }, maxAgeSeconds: 3_600, batch: 200 });
  });

  test('bad values are each reported by name', () => {
    const problems = problemsOf({
      SVC_DEPOSIT_SWEEP: 'maybe',
      SVC_DEPOSIT_SWEEP_INTERVAL_SECONDS: '1',
      SVC_DEPOSIT_SWEEP_MIN_USDC: '-1',
      SVC_DEPOSIT_SWEEP_MIN_USDT: '0.0000001',
      SVC_DEPOSIT_SWEEP_BATCH: '201',
    });
    for (const name of [
      'SVC_DEPOSIT_SWEEP=',
      'SVC_DEPOSIT_SWEEP_INTERVAL_SECONDS=',
      'SVC_DEPOSIT_SWEEP_MIN_USDC=',
      'SVC_DEPOSIT_SWEEP_MIN_USDT=',
      'SVC_DEPOSIT_SWEEP_BATCH=',
    ])
      expect(
        problems.some((problem) => problem.startsWith(name)),
        name,
      ).toBe(true);
  });
});
