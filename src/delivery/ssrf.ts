import dns from 'node:dns';
import net from 'node:net';
import { NonRetryableError } from '../internal/errors.ts';

/**
 * What a webhook may reach: `false` public addresses only; `'loopback'` public and loopback (a
 * developer's local receiver, the default for sandbox webhooks); `true` anything (the operator
 * allows private networks).
 */
export type AllowPrivate = boolean | 'loopback';

/**
 * IPv4 a webhook must never reach unless the operator allows it (SVC_WEBHOOK_ALLOW_PRIVATE):
 * RFC 1918 private ranges, link-local (cloud metadata lives at 169.254.169.254), carrier-grade
 * NAT, "this network", IETF protocol assignments, documentation, benchmarking, the deprecated 6to4
 * relay anycast, multicast and reserved space. Loopback (127/8) is judged on its own.
 */
const BLOCKED_V4 = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED_V4.addSubnet(address, prefix, 'ipv4');
}

/** Where an address leads: the public internet, this host (loopback), or anywhere else (refused). */
type AddressKind = 'public' | 'loopback' | 'private';

function ipv4Kind(address: string): AddressKind {
  if (address.startsWith('127.')) return 'loopback';
  return BLOCKED_V4.check(address, 'ipv4') ? 'private' : 'public';
}

/**
 * The 128 bits of an IPv6 address, or undefined when it does not parse (a zone id such as
 * `fe80::1%eth0` included). The URL parser canonicalises every spelling (dotted tails, upper
 * case, leading zeros) to compressed hex groups, which are then expanded.
 */
function ipv6Bits(address: string): bigint | undefined {
  let host: string;
  try {
    host = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head = '', tail] = host.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((bits, group) => (bits << 16n) | BigInt(parseInt(group, 16)), 0n);
}

const prefix = (text: string, length: number) => ({ bits: ipv6Bits(text)!, length: BigInt(length) });
const inPrefix = (bits: bigint, range: { bits: bigint; length: bigint }) => bits >> (128n - range.length) === range.bits >> (128n - range.length);
const embeddedIpv4 = (bits: bigint) => [24n, 16n, 8n, 0n].map((shift) => Number((bits >> shift) & 255n)).join('.');

const V6 = {
  loopback: ipv6Bits('::1')!,
  /** IPv4-mapped (::ffff:a.b.c.d): a dual-stack socket reaches that IPv4 address on this host's stack. */
  mapped: prefix('::ffff:0:0', 96),
  /** Well-known NAT64 (RFC 6052): a translator reaches the embedded IPv4 address; DNS64 makes these for IPv4-only hosts. */
  nat64: prefix('64:ff9b::', 96),
  /** Global unicast; everything outside it is refused (::/96 IPv4-compatible, ::ffff:0:0:0/96 translated, 64:ff9b:1::/48 local NAT64, 100::/64 discard, fc00::/7, fe80::/10, fec0::/10, ff00::/8, unassigned). */
  global: prefix('2000::', 3),
  /** Inside global unicast but not a webhook's: IETF protocol assignments (Teredo 2001::/32 embeds IPv4), documentation, 6to4 (embeds IPv4, deprecated). */
  special: [prefix('2001::', 23), prefix('2001:db8::', 32), prefix('2002::', 16), prefix('3fff::', 20)],
};

/**
 * Judges an IP address. IPv6 forms that embed IPv4 are decoded and the IPv4 judged (mapped), or
 * must embed a public one (NAT64), or are refused outright (IPv4-compatible, translated, local
 * NAT64, 6to4, Teredo): a translator on the operator's network would otherwise carry a webhook to
 * a private IPv4 address the IPv4 rules refuse. Not an IP address at all: private (refused).
 */
function addressKind(address: string): AddressKind {
  const family = net.isIP(address);
  if (family === 4) return ipv4Kind(address);
  const bits = family === 6 ? ipv6Bits(address) : undefined;
  if (bits === undefined) return 'private';
  if (bits === V6.loopback) return 'loopback';
  if (inPrefix(bits, V6.mapped)) return ipv4Kind(embeddedIpv4(bits));
  if (inPrefix(bits, V6.nat64)) return ipv4Kind(embeddedIpv4(bits)) === 'public' ? 'public' : 'private';
  if (!inPrefix(bits, V6.global) || V6.special.some((range) => inPrefix(bits, range))) return 'private';
  return 'public';
}

/** A webhook URL or address refused by the guard; never retried. */
export class UnsafeWebhookUrlError extends NonRetryableError {
  override name = 'UnsafeWebhookUrlError';
}

/** Whether a webhook may connect to `address` under `allowPrivate`. */
function isAllowedAddress(address: string, allowPrivate: AllowPrivate): boolean {
  if (allowPrivate === true) return true;
  const kind = addressKind(address);
  return kind === 'public' || (allowPrivate === 'loopback' && kind === 'loopback');
}

/** What a refused address is, for the error: loopback is named only where it is refused too. */
function refusedKind(allowPrivate: AllowPrivate): string {
  return allowPrivate === 'loopback'
    ? 'a private, link-local or reserved address (sandbox webhooks may reach loopback only)'
    : 'a private, loopback or link-local address';
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
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UnsafeWebhookUrlError(`webhook URL must use http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new UnsafeWebhookUrlError('webhook URL must not carry credentials');
  return url;
}

function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * Checks a webhook URL as registration does: well formed, and its host resolves only to addresses
 * `allowPrivate` allows (public ones; loopback too with 'loopback'; anything with true). Delivery
 * checks again at connection time (see guardedLookup), because DNS can change after registration.
 * @throws {UnsafeWebhookUrlError} for a malformed, unresolvable or private URL.
 */
export async function checkWebhookUrl(text: string, params: GuardParams): Promise<URL> {
  const url = parseWebhookUrl(text);
  if (params.allowPrivate === true) return url;
  const host = bareHost(url);
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    const lookup = params.lookup ?? dns.lookup;
    try {
      addresses = await new Promise<string[]>((resolve, reject) =>
        lookup(host, { all: true, verbatim: true }, (error, list) =>
          error ? reject(error) : resolve((list as dns.LookupAddress[]).map((entry) => entry.address)),
        ),
      );
    } catch {
      throw new UnsafeWebhookUrlError(`webhook URL host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0 || !addresses.every((address) => isAllowedAddress(address, params.allowPrivate))) {
    throw new UnsafeWebhookUrlError(`webhook URL host ${host} resolves to ${refusedKind(params.allowPrivate)}`);
  }
  return url;
}

/** The guard's setting, and (for tests) a replacement for `dns.lookup`, the system resolver. */
export interface GuardParams {
  allowPrivate: AllowPrivate;
  lookup?: typeof dns.lookup;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (undici's `connect` option) that refuses addresses `allowPrivate` does
 * not allow at connection time (every address the name has, not only the one used), so a host that resolved to a public address at registration and to an
 * internal one now (DNS rebinding) is still refused.
 */
export function guardedLookup(params: GuardParams) {
  const lookup = params.lookup ?? dns.lookup;
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as dns.LookupAddress[];
      if (list.length === 0 || !list.every((entry) => isAllowedAddress(entry.address, params.allowPrivate))) {
        return callback(new UnsafeWebhookUrlError(`${hostname} resolves to ${refusedKind(params.allowPrivate)}`) as NodeJS.ErrnoException, []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** Refuses an IP-literal host that `allowPrivate` does not allow (sockets skip `lookup` for literals). */
export function assertLiteralHostAllowed(url: URL, params: { allowPrivate: AllowPrivate }): void {
  const host = bareHost(url);
  if (net.isIP(host) && !isAllowedAddress(host, params.allowPrivate)) {
    throw new UnsafeWebhookUrlError(`${host} is ${refusedKind(params.allowPrivate)}`);
  }
}
