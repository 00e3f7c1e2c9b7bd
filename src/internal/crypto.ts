import { createCipheriv, createDecipheriv, createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isFileExistsError } from './errors.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Bytes fetched from the CSPRNG at a time by {@link takeRandomBytes}. */
const RANDOM_POOL_BYTES = 4096;
const randomPool = Buffer.alloc(RANDOM_POOL_BYTES);
let randomPoolUsed = RANDOM_POOL_BYTES;

/**
 * `n` fresh random bytes from the CSPRNG, taken from a pool refilled 4 KiB at a time: one call
 * into OpenSSL per pool instead of one per id or nonce (that call was a few percent of a creation's
 * and of a delivery's CPU, docs/benchmarks.md, issue 28), as node's own randomUUID does. No byte
 * is handed out twice. The view is only valid until the next call (read it at once).
 */
export function takeRandomBytes(n: number): Uint8Array {
  if (n > RANDOM_POOL_BYTES) return randomBytes(n);
  if (randomPoolUsed + n > RANDOM_POOL_BYTES) {
    randomFillSync(randomPool);
    randomPoolUsed = 0;
  }
  const bytes = randomPool.subarray(randomPoolUsed, randomPoolUsed + n);
  randomPoolUsed += n;
  return bytes;
}

/**
 * Random base62 text of `length` characters. Rejection sampling keeps every character equally
 * likely (a plain `byte % 62` would favour the first eight).
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of takeRandomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * A public identifier with a type prefix (`mer_`, `key_`, `ses_`…), as Stripe does: readable in
 * logs, impossible to confuse across tables. 20 base62 characters carry 119 bits.
 */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}

export function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Constant-time equality of two strings (different lengths compare unequal, still in constant time for the shorter). */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

/**
 * Encrypts secrets that the daemon must read back (webhook signing secrets) with AES-256-GCM.
 * The stored text is `v1:<iv>:<tag>:<ciphertext>` in base64url, so a key rotation can add `v2`.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), body].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join(':');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split(':');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown sealed secret format');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The configured encryption key, or one generated on first use into `<dataDir>/encryption.key`
 * (mode 0600) so a single-host install works with no configuration. `wx` makes two processes
 * starting at once agree on one key: the loser reads the winner's file.
 */
export function loadOrCreateEncryptionKey(params: { configured: Buffer | undefined; dataDir: string }): Buffer {
  if (params.configured) return params.configured;
  const file = path.join(params.dataDir, 'encryption.key');
  fs.mkdirSync(params.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if (!isFileExistsError(error)) throw error;
  }
  for (let attempt = 0; attempt < 50; attempt++) {
    const text = fs.readFileSync(file, 'utf8').trim();
    if (text.length === 64) return Buffer.from(text, 'hex');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); // the other writer is mid-write
  }
  throw new Error(`${file} does not hold a 64-character hex key`);
}

/**
 * A webhook signing secret, `whsec_` and 32 base62 characters (190 bits), shown once. Here rather
 * than in delivery/ because creating a merchant (accounts/) makes its first two.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBase62(32)}`;
}
