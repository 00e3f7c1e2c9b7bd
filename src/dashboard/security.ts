import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual } from '../internal/crypto.ts';

/**
 * The dashboard's Content-Security-Policy: scripts and styles only from this origin's own files
 * (no inline script or style at all, not even hashed: the pages carry none), images from here or
 * `data:` (QR codes), fetches (htmx) only to here, forms post only here, no framing, no `<base>`.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * Headers of every dashboard page and fragment: never cached, never framed. `Referrer-Policy:
 * same-origin`: no other site learns a dashboard URL (sign-in link tokens are in URLs), while
 * browsers still send a real `Origin` on our own form posts (with `no-referrer` Chromium sends
 * `Origin: null`, which the CSRF check must refuse).
 */
export function setPageHeaders(reply: FastifyReply, params: { https: boolean }): void {
  reply.header('Content-Security-Policy', DASHBOARD_CSP);
  reply.header('X-Frame-Options', 'DENY');
  reply.header('Cache-Control', 'no-store');
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Referrer-Policy', 'same-origin');
  reply.header('Cross-Origin-Opener-Policy', 'same-origin');
  reply.header('Cross-Origin-Resource-Policy', 'same-origin');
  reply.header('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=(), usb=()');
  // A private tool: search engines should not index its sign-in page.
  reply.header('X-Robots-Tag', 'noindex, nofollow');
  if (params.https) reply.header('Strict-Transport-Security', 'max-age=31536000');
}

/**
 * Cookie names: with https the `__Host-` prefix, which browsers accept only with `Secure`,
 * `Path=/` and no `Domain`, so no sibling subdomain can set or shadow it.
 */
export function cookieNames(https: boolean): { session: string; preSession: string } {
  return https ? { session: '__Host-svc_dash', preSession: '__Host-svc_dash_pre' } : { session: 'svc_dash', preSession: 'svc_dash_pre' };
}

/**
 * A `Set-Cookie` value: `HttpOnly` (no script reads it), `SameSite=Lax` (not sent on cross-site
 * POSTs; sent when a person follows a link to the dashboard, so a bookmarked page opens signed
 * in), `Secure` under https. A session cookie (no Max-Age): the server's idle and absolute expiry
 * decide how long it works; `maxAgeSeconds: 0` deletes it.
 */
export function serializeCookie(name: string, value: string, params: { https: boolean; maxAgeSeconds?: number }): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (params.https) parts.push('Secure');
  if (params.maxAgeSeconds !== undefined) parts.push(`Max-Age=${params.maxAgeSeconds}`);
  return parts.join('; ');
}

/** The value of cookie `name` in the request, or undefined. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/**
 * Whether a state-changing request comes from the dashboard's own pages, by what browsers
 * send: `Origin` must be this site (the public URL's origin or the host the request names);
 * without it, `Sec-Fetch-Site` must be `same-origin` (or `none`: typed by the person). A client
 * that sends neither (curl, a test) is not a browser a cross-site page could drive: the CSRF
 * token alone decides for it.
 */
export function isSameOriginRequest(request: FastifyRequest, publicUrl: string): boolean {
  const origin = request.headers.origin;
  if (typeof origin === 'string') {
    if (origin === 'null') return false;
    return origin === new URL(publicUrl).origin || origin === `${request.protocol}://${request.host}`;
  }
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  return true;
}

/** The CSRF token the request carries: the `_csrf` form field, or the `X-CSRF-Token` header (htmx). */
export function presentedCsrfToken(request: FastifyRequest): string | undefined {
  const body = request.body as Record<string, unknown> | undefined;
  const field = body && typeof body === 'object' ? body._csrf : undefined;
  if (typeof field === 'string') return field;
  const header = request.headers['x-csrf-token'];
  return typeof header === 'string' ? header : undefined;
}

/** Constant-time check of a presented CSRF token against the expected one. */
export function csrfTokenMatches(presented: string | undefined, expected: string): boolean {
  return presented !== undefined && expected.length > 0 && constantTimeEqual(presented, expected);
}
