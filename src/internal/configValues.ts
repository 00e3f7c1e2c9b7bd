import { isIP } from 'node:net';

// How each environment variable's text becomes a value (config.ts lists the variables). A parser
// throws an Error whose message says what the value must be; loadConfig prefixes it with the
// variable and its value and reports every problem at once in one ConfigError.

/** One environment variable: its name, its documentation and how its text becomes a value. */
export interface Variable<T> {
  name: string;
  doc: string;
  default: string | undefined;
  parse: (raw: string) => T;
}

const problems = {
  port: 'must be an integer from 0 to 65535 (0 picks a free port)',
  boolean: 'must be one of true, false, 1, 0, yes, no',
};

/** A TCP port, 0 to 65535 (0: the system picks a free one). */
export function parsePort(raw: string): number {
  if (!/^\d+$/.test(raw)) throw new Error(problems.port);
  const port = Number(raw);
  if (port > 65535) throw new Error(problems.port);
  return port;
}

/** An absolute URL with one of `protocols`, without its trailing slashes. */
export function parseHttpUrl(raw: string, protocols = ['http:', 'https:']): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`must be an absolute ${protocols.map((p) => p.slice(0, -1)).join('/')} URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new Error(`must use ${protocols.join(' or ')}, not ${url.protocol}`);
  }
  return raw.replace(/\/+$/, '');
}

/** A parser of comma-separated absolute URLs with one of `protocols` (empty parts skipped). */
export function parseUrlList(protocols: string[]) {
  return (raw: string): string[] =>
    raw
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part.length > 0)
      .map((part) => parseHttpUrl(part, protocols));
}

/** A whole number of seconds, at most a year. */
export function parseSeconds(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > 365 * 86400) throw new Error('must be a whole number of seconds from 0 to 31536000');
  return Number(raw);
}

/** fastify's `trustProxy`: a boolean, a hop count, or comma-separated IP addresses or CIDRs. */
export function parseTrustProxy(raw: string): boolean | number | string {
  const value = raw.trim();
  if (/^\d+$/.test(value)) return Number(value);
  if (['true', 'false', 'yes', 'no'].includes(value.toLowerCase())) return parseBoolean(value);
  const parts = value.split(',').map((part) => part.trim());
  for (const part of parts) {
    const [address, bits] = part.split('/');
    if (!isIP(address ?? '') || (bits !== undefined && !/^\d{1,3}$/.test(bits)))
      throw new Error('must be true, false, a hop count, or comma-separated IP addresses or CIDRs');
  }
  return parts.join(',');
}

/** true/1/yes or false/0/no (any case); empty is false. */
export function parseBoolean(raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no', ''].includes(value)) return false;
  throw new Error(problems.boolean);
}

/** A 32-byte key, as 64 hex characters or base64. */
export function parseEncryptionKey(raw: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new Error('must be 32 bytes, as 64 hex characters or base64');
  return key;
}

/** A postgres:// (or postgresql://) connection URL, unchanged. */
export function parseDatabaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('must be a postgres:// connection URL');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error('must be a postgres:// connection URL');
  }
  return raw;
}

/** Web origins (scheme, host, optional port; no path), as a CSP `frame-ancestors` list takes them. */
export function parseOriginList(raw: string): string[] {
  return raw
    .split(/[\s,]+/)
    .filter((part) => part.length > 0)
    .map((part) => {
      let url: URL;
      try {
        url = new URL(part);
      } catch {
        throw new Error(`${JSON.stringify(part)} is not an origin such as https://shop.example`);
      }
      if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== part.replace(/\/$/, '')) {
        throw new Error(`${JSON.stringify(part)} is not an origin such as https://shop.example (scheme and host only, no path)`);
      }
      return url.origin;
    });
}

/** A parser that accepts exactly one of `values`. */
export function oneOf<T extends string>(values: readonly T[]) {
  return (raw: string): T => {
    if ((values as readonly string[]).includes(raw)) return raw as T;
    throw new Error(`must be one of ${values.join(', ')}`);
  };
}
