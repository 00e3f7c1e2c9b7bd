/**
 * Shared by the fuzzing and database-pressure runs (bench/chaos/fuzz.ts, dbPressure.ts) and their
 * short versions in test/chaos: the gateway as a real process (`svc start`, every role), the
 * accounts a run needs (each kind of key, a second merchant), and the checks every answer of
 * the API must pass.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createApiKey, createMerchant, revokeApiKey } from '../../../src/accounts/index.ts';
import { setMerchantRateLimits } from '../../../src/api/rateLimits.ts';
import { createSecretBox, type SecretBox } from '../../../src/internal/crypto.ts';
import type { Store } from '../../../src/store/index.ts';

/** The repository root: the daemon is started from there as `node bin/svc.js start`. */
const ROOT = path.resolve(import.meta.dirname, '../../..');

/** A gateway daemon running as its own process. */
export interface GatewayProcess {
  child: ChildProcess;
  pid: number;
  /** Its HTTP base, `http://127.0.0.1:<port>`. */
  url: string;
  /** What the first start made: the merchant and its test key (null on a later start). */
  bootstrap: { merchantId: string; testKey: string } | null;
  /** Every exit seen (a daemon that restarts or dies shows here). */
  exits: Array<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last log lines (warnings and errors), for a failed audit's report. */
  recentLogs: string[];
  /** SIGTERM, then SIGKILL after 15 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

/**
 * Starts `svc start --json` (api, ingest, worker) on `databaseUrl` as an operator would, and
 * resolves once it prints its ready line. The encryption key is given so the run can make
 * merchants (whose webhook secrets it seals) the daemon can read.
 */
export async function startGatewayProcess(params: { databaseUrl: string; encryptionKey: string; env?: Record<string, string> }): Promise<GatewayProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chaos-'));
  const child = spawn(process.execPath, ['bin/svc.js', 'start', '--json'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? dataDir,
      SVC_FROM_SOURCE: process.env.SVC_FROM_SOURCE ?? '1',
      DATABASE_URL: params.databaseUrl,
      SVC_ENCRYPTION_KEY: params.encryptionKey,
      SVC_DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      SVC_SANDBOX_BLOCK_MS: '20',
      SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
      // Requests come from a spread of X-Forwarded-For addresses, so the per-IP limit stays out of the way.
      SVC_TRUST_PROXY: 'true',
      ...params.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exits: GatewayProcess['exits'] = [];
  const recentLogs: string[] = [];
  const remember = (line: string) => {
    recentLogs.push(line.slice(0, 2_000));
    if (recentLogs.length > 50) recentLogs.shift();
  };
  child.on('exit', (code, signal) => exits.push({ code, signal }));
  readline.createInterface({ input: child.stderr! }).on('line', remember);
  const lines = readline.createInterface({ input: child.stdout! });
  const ready = await new Promise<Record<string, any>>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.includes('"status":"running"')) resolve(JSON.parse(line));
      else remember(line);
    });
    child.once('exit', (code) => reject(new Error(`the daemon exited with ${code} before it was ready:\n${recentLogs.join('\n')}`)));
  });
  return {
    child,
    pid: child.pid!,
    url: String(ready.url).replace('localhost', '127.0.0.1'),
    bootstrap: ready.bootstrap ? { merchantId: ready.bootstrap.merchantId, testKey: ready.bootstrap.testKey } : null,
    exits,
    recentLogs,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await gone;
        clearTimeout(timer);
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A fresh 32-byte encryption key (hex) and the box that seals with it, shared with the daemon. */
export function newEncryptionKey(): { hex: string; box: SecretBox } {
  const key = randomBytes(32);
  return { hex: key.toString('hex'), box: createSecretBox(key) };
}

/** Every kind of credential a request can carry, for a run that tries them all. */
export interface KeyRing {
  merchantId: string;
  otherMerchantId: string;
  live: string;
  test: string;
  readOnly: string;
  liveReadOnly: string;
  /** A test key of another merchant: must never see or change the first one's data. */
  otherMerchant: string;
  revoked: string;
}

/**
 * Makes two merchants with each kind of key, per-key limits out of the run's reach (a 429 is a
 * correct answer, but one that tests nothing past the limiter).
 */
export async function makeKeyRing(store: Store, box: SecretBox): Promise<KeyRing> {
  const { merchant } = await createMerchant(store, box, { name: 'Chaos Shop' });
  const { merchant: other } = await createMerchant(store, box, { name: 'Other Shop' });
  const key = async (merchantId: string, livemode: boolean, scopes?: Array<'read' | 'write'>) =>
    createApiKey(store, { merchantId, livemode, ...(scopes ? { scopes } : {}) });
  const revoked = await key(merchant.id, false);
  await revokeApiKey(store, revoked.apiKey.id);
  for (const id of [merchant.id, other.id]) await setMerchantRateLimits(store, { merchantId: id, create: 1e9, read: 1e9, write: 1e9 });
  return {
    merchantId: merchant.id,
    otherMerchantId: other.id,
    live: (await key(merchant.id, true)).secret,
    test: (await key(merchant.id, false)).secret,
    readOnly: (await key(merchant.id, false, ['read'])).secret,
    liveReadOnly: (await key(merchant.id, true, ['read'])).secret,
    otherMerchant: (await key(other.id, false)).secret,
    revoked: revoked.secret,
  };
}

/** An X-Forwarded-For address from 10/8, different on most requests. */
export function spreadAddress(): string {
  const byte = () => Math.floor(Math.random() * 250) + 1;
  return `10.${byte()}.${byte()}.${byte()}`;
}

/**
 * What is wrong with one answer of the API, or undefined when nothing is: a 5xx other than the
 * ones `allow` names, or a 4xx (or allowed 5xx) whose body is not exactly `{"error": "<text>"}`.
 */
export function answerDefect(answer: { status: number; body: string; method: string }, allow: { status503?: boolean } = {}): string | undefined {
  if (answer.status >= 500 && !(allow.status503 && answer.status === 503)) return `status ${answer.status}`;
  if (answer.status < 400 || answer.method === 'HEAD') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return `a ${answer.status} whose body is not JSON`;
  }
  const keys = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed) : [];
  const error = (parsed as { error?: unknown } | null)?.error;
  if (keys.length !== 1 || typeof error !== 'string' || error.length === 0) return `a ${answer.status} whose body is not {"error": "…"}`;
  return undefined;
}
