import type { FastifyReply } from 'fastify';
import { pageCsp, renderMessagePage } from './page.ts';
import { setCommonHeaders, setPageHeaders } from './securityHeaders.ts';

/** What a checkout URL answers to whom: a page for a customer's browser, JSON for agents and scripts. */

/** Whether a customer's browser is asking (it names text/html and does not prefer JSON): it should get a page, not JSON. */
export function wantsPage(accept: string | undefined): boolean {
  return Boolean(accept?.toLowerCase().includes('text/html')) && !prefersJson(accept);
}

/** Answers a browser with a one-message page in the checkout's style and headers (no framing, strict CSP). */
export function sendMessagePage(reply: FastifyReply, params: { status: number; title: string; text: string; https: boolean }): FastifyReply {
  setCommonHeaders(reply, { https: params.https });
  setPageHeaders(reply, { csp: pageCsp(), framable: false });
  return reply.status(params.status).type('text/html; charset=utf-8').send(renderMessagePage(params.title, params.text));
}

/**
 * Whether the client asked for JSON: an explicit `application/json` that it prefers at least as
 * much as an explicit `text/html`. Browsers name text/html; `*\/*` alone gets the page.
 */
export function prefersJson(accept: string | undefined): boolean {
  if (!accept) return false;
  let json: number | undefined;
  let html: number | undefined;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (type === 'application/json') json = Number.isFinite(q) ? q : 0;
    if (type === 'text/html') html = Number.isFinite(q) ? q : 0;
  }
  return json !== undefined && json > 0 && (html === undefined || json >= html);
}
