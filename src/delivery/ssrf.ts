import dns from 'node:dns';
import net from 'node:net';
import { NonRetryableError } from '../internal/errors.ts';

/**
 * Addresses a webhook must never reach unless the operator allows it (SVC_WEBHOOK_ALLOW_PRIVATE):
 * loopback, RFC 1918 and unique-local private ranges, link-local (cloud metadata lives at
 * 169.254.169.254), carrier-grade NAT, "this network", multicast and reserved space.
 */
const BLOCKED = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(address, prefix, 'ipv6');
}

/** A webhook URL or address refused by the guard; never retried. */
export class UnsafeWebhookUrlError extends NonRetryableError {
  override name = 'UnsafeWebhookUrlError';
}

/** True for an IP address in a private, loopback, link-local or reserved range (IPv4-mapped IPv6 included). */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return BLOCKED.check(mapped, 'ipv4');
  return BLOCKED.check(address, 'ipv6');
}

/**
 * The syntactic rules every webhook URL keeps: absolute http(s), no credentials, at most 2048
 * characters. @returns the parsed URL. @throws {UnsafeWebhookUrlError} saying what is wrong.
 */
export function parseWebhookUrl(text: string): URL {
  if (text.length > 2048) throw new UnsafeWebhookUrlError('webhook URL is longer than 2048 characters');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UnsafeWebhookUrlError('webhook URL must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UnsafeWebhookUrlError(`webhook URL must use http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new UnsafeWebhookUrlError('webhook URL must not carry credentials');
  return url;
}

function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Checks a webhook URL as registration does: well formed, and (unless `allowPrivate`) its host
 * resolves only to public addresses. Delivery checks again at connection time (see guardedLookup),
 * because DNS can change after registration.
 * @throws {UnsafeWebhookUrlError} for a malformed, unresolvable or private URL.
 */
export async function checkWebhookUrl(text: string, params: { allowPrivate: boolean }): Promise<URL> {
  const url = parseWebhookUrl(text);
  if (params.allowPrivate) return url;
  const host = bareHost(url);
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await dns.promises.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
    } catch {
      throw new UnsafeWebhookUrlError(`webhook URL host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0 || addresses.some(isPrivateAddress)) {
    throw new UnsafeWebhookUrlError(`webhook URL host ${host} resolves to a private, loopback or link-local address`);
  }
  return url;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (undici's `connect` option) that refuses private addresses at
 * connection time, so a host that resolved to a public address at registration and to an
 * internal one now (DNS rebinding) is still refused.
 */
export function guardedLookup(params: { allowPrivate: boolean }) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as dns.LookupAddress[];
      if (!params.allowPrivate && (list.length === 0 || list.some((entry) => isPrivateAddress(entry.address)))) {
        return callback(new UnsafeWebhookUrlError(`${hostname} resolves to a private, loopback or link-local address`) as NodeJS.ErrnoException, []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** Refuses an IP-literal host that is private (sockets skip `lookup` for literals). */
export function assertLiteralHostAllowed(url: URL, params: { allowPrivate: boolean }): void {
  const host = bareHost(url);
  if (!params.allowPrivate && net.isIP(host) && isPrivateAddress(host)) {
    throw new UnsafeWebhookUrlError(`${host} is a private, loopback or link-local address`);
  }
}
