/**
 * Addresses the SSRF guard must refuse, shared by the registration and connection-time tests.
 * Each is an IPv6 form that embeds or translates IPv4, or another special IPv6 range.
 */
export const EMBEDDED_FORMS: [name: string, address: string][] = [
  ['IPv4-compatible ::/96 holding loopback', '::127.0.0.1'],
  ['IPv4-compatible ::/96 holding a private address', '::10.0.0.1'],
  ['the unspecified address ::', '::'],
  ['IPv4-mapped ::ffff:0:0/96 holding a private address', '::ffff:10.0.0.1'],
  ['IPv4-mapped ::ffff:0:0/96 holding cloud metadata', '::ffff:169.254.169.254'],
  ['IPv4-mapped ::ffff:0:0/96 holding CGNAT', '::ffff:100.64.0.1'],
  ['IPv4-translated ::ffff:0:0:0/96', '::ffff:0:10.0.0.1'],
  ['NAT64 64:ff9b::/96 holding a private address', '64:ff9b::10.0.0.1'],
  ['NAT64 64:ff9b::/96 holding cloud metadata', '64:ff9b::169.254.169.254'],
  ['NAT64 64:ff9b::/96 holding loopback', '64:ff9b::127.0.0.1'],
  ['local-use NAT64 64:ff9b:1::/48', '64:ff9b:1::a00:1'],
  ['6to4 2002::/16 holding a private address', '2002:a00:1::1'],
  ['6to4 2002::/16 holding a public address', '2002:808:808::1'],
  ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  ['discard-only 100::/64', '100::1'],
  ['site-local fec0::/10', 'fec0::1'],
  ['documentation 2001:db8::/32', '2001:db8::1'],
];

/** Non-loopback internal ranges that sandbox webhooks must not reach either. */
export const INTERNAL_FORMS: [name: string, address: string][] = [
  ['RFC 1918 10/8', '10.0.0.1'],
  ['RFC 1918 172.16/12', '172.16.5.4'],
  ['RFC 1918 192.168/16', '192.168.1.1'],
  ['link-local 169.254/16', '169.254.10.10'],
  ['cloud metadata 169.254.169.254', '169.254.169.254'],
  ['CGNAT 100.64/10', '100.64.0.1'],
  ['unique-local fc00::/7', 'fd12:3456::1'],
  ['AWS IPv6 metadata fd00:ec2::254', 'fd00:ec2::254'],
  ['link-local fe80::/10', 'fe80::1'],
];

/** Loopback in its spellings: a developer's local receiver, allowed for sandbox webhooks. */
export const LOOPBACK_FORMS: [name: string, address: string][] = [
  ['127.0.0.1', '127.0.0.1'],
  ['127/8 beyond .1', '127.0.0.2'],
  ['::1', '::1'],
  ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
];

/** The host of an address as a URL carries it (IPv6 in brackets). */
export const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address);

/** The address as the URL parser writes it back (the form error messages name). */
export const canonical = (address: string) => new URL(`http://${urlHost(address)}/`).hostname.replace(/^\[|\]$/g, '');
