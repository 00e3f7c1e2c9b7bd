import path from 'node:path';
import { ConfigError } from './errors.ts';
import {
  oneOf,
  parseBoolean,
  parseDatabaseUrl,
  parseEncryptionKey,
  parseHttpUrl,
  parseOriginList,
  parsePort,
  parseSeconds,
  parseTrustProxy,
  parseUrlList,
  type Variable,
} from './configValues.ts';
import { readRelayerKeys } from './relayerKeys.ts';
import { readSolanaFeePayerKey } from './solanaFeePayerKey.ts';
import { readGasAlertThresholds } from './gasAlert.ts';
export { relayerKeyFileVariableName, relayerKeyVariableName } from './relayerKeys.ts';
import { HTTP_TIMEOUT_VARIABLES, httpTimeoutProblems, readHttpTimeouts, type HttpTimeouts } from './httpTimeouts.ts';
import { SWEEPER_VARIABLES, readSweeperConfig, type SweeperConfig } from './sweeperConfig.ts';

import { CHAIN_NAMES, type ChainName } from './chainNames.ts';
export { CHAIN_NAMES, type ChainName } from './chainNames.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const LOG_FORMATS = ['json', 'pretty'] as const;
/** How log lines are written: one JSON object per line, or readable lines (pino-pretty). */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** RPC endpoints of one chain; empty lists mean the chain runs sandbox-only. */
export interface ChainRpcConfig {
  /** HTTP JSON-RPC URLs in failover order (`SVC_<CHAIN>_RPC_URL`, comma-separated). */
  http: string[];
  /** WebSocket URLs in failover order (`SVC_<CHAIN>_WS_URL`, comma-separated). */
  ws: string[];
}

/** The daemon's whole configuration, read once from the environment. */
export interface Config {
  port: number;
  host: string;
  /** `undefined` selects an embedded Postgres under `dataDir`. */
  databaseUrl: string | undefined;
  /** Base of customer-facing links (checkout pages), without a trailing slash. */
  publicUrl: string;
  /** SVC_PUBLIC_URL was unset: the daemon replaces publicUrl with its real address once listening (PORT=0). */
  publicUrlIsDefault: boolean;
  rpc: Record<ChainName, ChainRpcConfig>;
  /** Live webhook URLs may resolve to loopback, private or link-local addresses. */
  webhookAllowPrivate: boolean;
  /** Sandbox (test-key) webhook URLs: 'loopback' (only) by default, true with SVC_WEBHOOK_ALLOW_PRIVATE=true, false with false. */
  webhookAllowPrivateSandbox: boolean | 'loopback';
  logLevel: LogLevel;
  /** SVC_LOG_FORMAT; undefined: pretty on a terminal, JSON otherwise (internal/logger.ts). */
  logFormat: LogFormat | undefined;
  /** Folder for local state: the embedded Postgres cluster and the generated secret key. */
  dataDir: string;
  /** Port of the embedded Postgres; ignored when `databaseUrl` is set. */
  embeddedPostgresPort: number;
  /** 32-byte key that encrypts webhook secrets at rest; `undefined` means "generate under dataDir". */
  encryptionKey: Buffer | undefined;
  /** Seconds after a session expires during which a payment still counts (late), and its due amount stays reserved. */
  monitorWindowSeconds: number;
  /** The operator's flat fee per payment in basis points (SVC_FEE_BPS; 100 = the spec's 1 %). */
  feeBps: number;
  /** SVC_PEG_BAND_BPS: how far (basis points) a stablecoin's USD feed may be from 1 before fiat prices are refused (src/pricing). */
  pegBandBps: number;
  /** Block time of the sandbox's simulated chains, in milliseconds (the same for every chain). */
  sandboxBlockMs: number;
  /** Longest wait of the HTTP layer for one database statement, in milliseconds (then 503). */
  apiDbTimeoutMs: number;
  /** A port for a separate Prometheus `/metrics` listener (for processes without the api role). */
  metricsPort: number | undefined;
  /** Origins allowed to frame the hosted checkout page; empty (the default): none may. */
  checkoutFrameAncestors: string[];
  /** Which proxies' X-Forwarded-For to believe for the client IP (per-IP rate limits): false, true, a hop count, or addresses/CIDRs. */
  trustProxy?: boolean | number | string;
  /** How long the HTTP server waits for slow or idle clients (SVC_HTTP_*_TIMEOUT_MS). */
  httpTimeouts: HttpTimeouts;
  /**
   * Gas-only relayer keys per EVM chain (`SVC_<CHAIN>_RELAYER_KEY`, or the file its `_FILE` variable
   * names: x402 settlements and deposit sweeps): never stored, never logged (docs/security.md, "x402"). A chain without one
   * offers no live x402 settlement.
   */
  relayerKeys: Partial<Record<ChainName, `0x${string}`>>;
  /**
   * The Solana fee payer of x402's `exact` scheme (`SVC_SOLANA_RELAYER_KEY` or its `_FILE`): a
   * 64-byte ed25519 keypair holding SOL for fees only; never stored, never logged. Unset: no live
   * x402 on solana.
   */
  solanaFeePayerKey?: Uint8Array | undefined;
  /**
   * Per chain, the native coin (decimal text, whole coins) below which its relayer key or fee payer
   * is reported low (`SVC_<CHAIN>_RELAYER_GAS_ALERT_BELOW`, src/internal/gasAlert.ts). Unset in a
   * hand-built Config: the defaults.
   */
  relayerGasAlertBelow?: Record<ChainName, string>;
  /** The worker's automatic deposit sweeper (SVC_DEPOSIT_SWEEP_*). */
  sweeper: SweeperConfig;
}

type Env = Record<string, string | undefined>;

/**
 * Every variable the daemon reads, with its documentation. The configuration table in docs/configuration.md
 * is this list; `svc config` prints it.
 */
export const VARIABLES = {
  port: { name: 'PORT', doc: 'HTTP port of the API and checkout pages', default: '8080', parse: parsePort },
  host: {
    name: 'HOST',
    doc: 'Address the HTTP server binds to; 0.0.0.0 to listen on all interfaces',
    default: '127.0.0.1',
    parse: (raw: string) => raw.trim(),
  },
  databaseUrl: {
    name: 'DATABASE_URL',
    doc: 'Postgres connection URL; unset starts an embedded Postgres under SVC_DATA_DIR',
    default: undefined,
    parse: parseDatabaseUrl,
  },
  publicUrl: {
    name: 'SVC_PUBLIC_URL',
    doc: 'Public base URL of checkout links (default http://HOST:PORT)',
    default: undefined,
    parse: (raw: string) => parseHttpUrl(raw),
  },
  webhookAllowPrivate: {
    name: 'SVC_WEBHOOK_ALLOW_PRIVATE',
    doc: 'Webhook URLs that resolve to non-public addresses: "sandbox" (default, except under SVC_STATELESS where the default is "false") allows loopback only, for test-key endpoints only; "true" allows loopback, private and link-local for all; "false" none',
    default: 'sandbox',
    parse: (raw: string): 'all' | 'sandbox' | 'none' => {
      if (raw.trim().toLowerCase() === 'sandbox') return 'sandbox';
      try {
        return parseBoolean(raw) ? 'all' : 'none';
      } catch {
        throw new Error('must be sandbox, true or false (also 1, 0, yes, no)');
      }
    },
  },
  logLevel: { name: 'LOG_LEVEL', doc: 'pino log level', default: 'info', parse: oneOf(LOG_LEVELS) },
  logFormat: {
    name: 'SVC_LOG_FORMAT',
    doc: 'Log lines: json (one object per line) or pretty (readable lines); unset: pretty on a terminal, json otherwise',
    default: undefined,
    parse: oneOf(LOG_FORMATS),
  },
  dataDir: {
    name: 'SVC_DATA_DIR',
    doc: 'Folder for local state (embedded Postgres, generated encryption key)',
    default: '.data',
    parse: (raw: string) => path.resolve(raw),
  },
  embeddedPostgresPort: {
    name: 'SVC_EMBEDDED_PG_PORT',
    doc: 'Port of the embedded Postgres (only when DATABASE_URL is unset)',
    default: '54329',
    parse: parsePort,
  },
  encryptionKey: {
    name: 'SVC_ENCRYPTION_KEY',
    doc: 'Key that encrypts webhook secrets at rest: 32 bytes as hex or base64. Unset: generated once into SVC_DATA_DIR/encryption.key. Set it when several hosts share one database',
    default: undefined,
    parse: parseEncryptionKey,
  },
  monitorWindowSeconds: {
    name: 'SVC_MONITOR_WINDOW_SECONDS',
    doc: 'Seconds after expiry during which a late payment is still recognised (and the due amount stays reserved)',
    default: '86400',
    parse: parseSeconds,
  },
  feeBps: {
    name: 'SVC_FEE_BPS',
    doc: "The flat fee per payment, in basis points (100 = 1 %, the spec's): what GET /fees totals, the operator's own accounting; no funds move for it. Applies to sessions created from then on",
    default: '100',
    parse: (raw: string) => {
      if (!/^\d+$/.test(raw.trim()) || Number(raw) > 10_000) throw new Error('must be a whole number of basis points from 0 to 10000 (100 = 1 %)');
      return Number(raw);
    },
  },
  pegBandBps: {
    name: 'SVC_PEG_BAND_BPS',
    doc: "How far a stablecoin's Chainlink USD price may be from 1.00, in basis points (200 = ±2 %), before a session priced in a fiat currency is refused (422) instead of priced off the peg",
    default: '200',
    parse: (raw: string) => {
      if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1 || Number(raw) > 5_000)
        throw new Error('must be a whole number of basis points from 1 to 5000 (200 = 2 %)');
      return Number(raw);
    },
  },
  metricsPort: {
    name: 'SVC_METRICS_PORT',
    doc: 'Serve Prometheus /metrics, with /ready and /health, on this port too (on HOST); needed for processes started without the api role',
    default: undefined,
    parse: parsePort,
  },
  sandboxBlockMs: {
    name: 'SVC_SANDBOX_BLOCK_MS',
    doc: 'Block time of the sandbox simulated chains in milliseconds; small so a sandbox payment confirms in seconds',
    default: '250',
    parse: (raw: string) => {
      if (!/^\d+$/.test(raw) || Number(raw) < 10 || Number(raw) > 60_000) throw new Error('must be a whole number of milliseconds from 10 to 60000');
      return Number(raw);
    },
  },
  apiDbTimeoutMs: {
    name: 'SVC_API_DB_TIMEOUT_MS',
    doc: 'Longest wait of an API request for one database statement, in milliseconds; past it the request answers 503 with Retry-After (workers are not limited)',
    default: '10000',
    parse: (raw: string) => {
      if (!/^\d+$/.test(raw) || Number(raw) < 100 || Number(raw) > 600_000) throw new Error('must be a whole number of milliseconds from 100 to 600000');
      return Number(raw);
    },
  },
  trustProxy: {
    name: 'SVC_TRUST_PROXY',
    doc: 'Behind a load balancer: whose X-Forwarded-For gives the client IP for per-IP rate limits. false (socket address), true (any), a hop count, or comma-separated addresses/CIDRs of the proxies',
    default: 'false',
    parse: parseTrustProxy,
  },
  checkoutFrameAncestors: {
    name: 'SVC_CHECKOUT_FRAME_ANCESTORS',
    doc: 'Origins allowed to embed the checkout page in a frame, space- or comma-separated (https://shop.example); unset: no site may frame it',
    default: '',
    parse: parseOriginList,
  },
  ...HTTP_TIMEOUT_VARIABLES,
  ...SWEEPER_VARIABLES,
  stateless: {
    name: 'SVC_STATELESS',
    doc: 'true: keep no state under SVC_DATA_DIR, so DATABASE_URL and SVC_ENCRYPTION_KEY are required (no embedded Postgres, no generated key). The container image sets it',
    default: 'false',
    parse: parseBoolean,
  },
} satisfies Record<string, Variable<unknown>>;

/** The per-chain RPC variables, documented alongside VARIABLES. */
export function rpcVariableNames(chain: ChainName): { http: string; ws: string } {
  const upper = chain.toUpperCase();
  return { http: `SVC_${upper}_RPC_URL`, ws: `SVC_${upper}_WS_URL` };
}

/**
 * Reads and validates the configuration. Every bad variable is reported at once, each by name,
 * so an operator fixes a deployment in one pass.
 * @throws {ConfigError} listing each variable that is wrong and why.
 */
export function loadConfig(env: Env = process.env): Config {
  const errors: string[] = [];

  function read<T>(variable: Variable<T>): T | undefined {
    const raw = env[variable.name];
    const text = raw === undefined || raw.trim() === '' ? variable.default : raw;
    if (text === undefined) return undefined;
    try {
      return variable.parse(text);
    } catch (error) {
      errors.push(`${variable.name}=${JSON.stringify(raw)}: ${(error as Error).message}`);
      return undefined;
    }
  }

  const port = read(VARIABLES.port) ?? 0;
  const host = read(VARIABLES.host) ?? '127.0.0.1';
  const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const rpc = {} as Record<ChainName, ChainRpcConfig>;
  for (const chain of CHAIN_NAMES) {
    const names = rpcVariableNames(chain);
    rpc[chain] = {
      http: read({ name: names.http, doc: '', default: '', parse: parseUrlList(['http:', 'https:']) }) ?? [],
      ws: read({ name: names.ws, doc: '', default: '', parse: parseUrlList(['ws:', 'wss:']) }) ?? [],
    };
  }

  const relayerKeys = readRelayerKeys(env, errors);
  const solanaFeePayerKey = readSolanaFeePayerKey(env, errors);

  // A deployed gateway (SVC_STATELESS, the container image) serves merchants it does not trust
  // with its own loopback: a test key's endpoint on 127.0.0.1 would reach the host's other
  // services (metrics, admin ports) and echo 2 KiB of their reply into the attempt log. Only a
  // development install (the README's `npm start`) lets sandbox endpoints use loopback by default.
  const privateWebhooks =
    env[VARIABLES.webhookAllowPrivate.name]?.trim() || !read(VARIABLES.stateless) ? (read(VARIABLES.webhookAllowPrivate) ?? 'sandbox') : 'none';
  const config: Config = {
    port,
    host,
    databaseUrl: read(VARIABLES.databaseUrl),
    publicUrlIsDefault: !env[VARIABLES.publicUrl.name]?.trim(),
    publicUrl: read(VARIABLES.publicUrl) ?? `http://${publicHost.includes(':') ? `[${publicHost}]` : publicHost}:${port}`,
    rpc,
    webhookAllowPrivate: privateWebhooks === 'all',
    webhookAllowPrivateSandbox: privateWebhooks === 'sandbox' ? 'loopback' : privateWebhooks === 'all',
    logLevel: read(VARIABLES.logLevel) ?? 'info',
    logFormat: read(VARIABLES.logFormat),
    dataDir: read(VARIABLES.dataDir) ?? path.resolve('.data'),
    embeddedPostgresPort: read(VARIABLES.embeddedPostgresPort) ?? 54329,
    encryptionKey: read(VARIABLES.encryptionKey),
    monitorWindowSeconds: read(VARIABLES.monitorWindowSeconds) ?? 86400,
    feeBps: read(VARIABLES.feeBps) ?? 100,
    pegBandBps: read(VARIABLES.pegBandBps) ?? 200,
    sandboxBlockMs: read(VARIABLES.sandboxBlockMs) ?? 250,
    apiDbTimeoutMs: read(VARIABLES.apiDbTimeoutMs) ?? 10_000,
    metricsPort: read(VARIABLES.metricsPort),
    checkoutFrameAncestors: read(VARIABLES.checkoutFrameAncestors) ?? [],
    trustProxy: read(VARIABLES.trustProxy) ?? false,
    httpTimeouts: readHttpTimeouts(read),
    relayerKeys,
    solanaFeePayerKey,
    relayerGasAlertBelow: readGasAlertThresholds(env, errors),
    sweeper: readSweeperConfig(read),
  };
  if (errors.length === 0) errors.push(...httpTimeoutProblems(config.httpTimeouts, config.apiDbTimeoutMs));
  // A container's file system is thrown away: an embedded cluster or a generated key there would
  // be lost (and differ per replica), so a stateless process refuses to start without them.
  if (read(VARIABLES.stateless)) {
    if (!config.databaseUrl && !errors.some((error) => error.startsWith('DATABASE_URL=')))
      errors.push('DATABASE_URL is required: SVC_STATELESS=true (the container image) runs no embedded Postgres');
    if (!config.encryptionKey && !errors.some((error) => error.startsWith('SVC_ENCRYPTION_KEY=')))
      errors.push('SVC_ENCRYPTION_KEY is required: SVC_STATELESS=true (the container image) generates no key, and every process must use the same one');
  }
  if (errors.length > 0) throw new ConfigError(errors);
  return config;
}

/** Chains that have at least one RPC URL and so get a live ingester. */
/** Which non-public addresses webhook URLs of this mode may resolve to (see AllowPrivate in src/delivery/ssrf.ts). */
export function allowPrivateWebhooks(config: Pick<Config, 'webhookAllowPrivate' | 'webhookAllowPrivateSandbox'>, livemode: boolean): boolean | 'loopback' {
  return livemode ? config.webhookAllowPrivate : config.webhookAllowPrivateSandbox;
}

export function liveChains(config: Config): ChainName[] {
  return CHAIN_NAMES.filter((chain) => config.rpc[chain].http.length > 0 || config.rpc[chain].ws.length > 0);
}
