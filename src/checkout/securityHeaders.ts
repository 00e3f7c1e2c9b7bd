import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

/** `'sha256-…'` CSP source of an inline script or style, so exactly that text may run. */
export function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The page's Content-Security-Policy: nothing loads from anywhere but this origin, only the
 * page's own inline script and style run (pinned by hash, so an injected tag cannot), it
 * connects only to its own origin (status feed, refund), forms post only to itself, and no
 * other site may frame it (clickjacking a payment page is the classic attack) unless the operator
 * lists its origin in SVC_CHECKOUT_FRAME_ANCESTORS (an embedded checkout, as Stripe offers).
 */
export function checkoutCsp(params: { scriptHashes: string[]; styleHashes: string[]; frameAncestors?: readonly string[] }): string {
  return [
    "default-src 'none'",
    `script-src ${params.scriptHashes.join(' ')}`,
    `style-src ${params.styleHashes.join(' ')}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    `frame-ancestors ${params.frameAncestors?.length ? params.frameAncestors.join(' ') : "'none'"}`,
    "base-uri 'none'",
  ].join('; ');
}

/** Headers every checkout response carries, HTML or JSON. */
export function setCommonHeaders(reply: FastifyReply, params: { https: boolean }): void {
  reply.header('Cache-Control', 'no-store');
  reply.header('X-Content-Type-Options', 'nosniff');
  // The session id is in the URL: never send it to another site in a Referer.
  reply.header('Referrer-Policy', 'no-referrer');
  reply.header('Vary', 'Accept');
  if (params.https) reply.header('Strict-Transport-Security', 'max-age=31536000');
}

/** Headers of the HTML page on top of the common ones. */
export function setPageHeaders(reply: FastifyReply, params: { csp: string; framable: boolean }): void {
  reply.header('Content-Security-Policy', params.csp);
  // For browsers that predate frame-ancestors; it cannot name origins, so it is left out when some may frame.
  if (!params.framable) reply.header('X-Frame-Options', 'DENY');
  reply.header('Cross-Origin-Opener-Policy', 'same-origin');
  reply.header('Cross-Origin-Resource-Policy', 'same-origin');
  reply.header('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=(), usb=()');
}
