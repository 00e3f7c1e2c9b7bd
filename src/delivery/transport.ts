import { setMaxListeners } from 'node:events';
import type { Agent } from 'undici';
import { findCause } from '../internal/errors.ts';
import { assertLiteralHostAllowed, guardedLookup, parseWebhookUrl, UnsafeWebhookUrlError, type GuardParams } from './ssrf.ts';

/** Spec-independent contract with receivers: an attempt that has no full answer in 15 s failed. */
export const DELIVERY_TIMEOUT_MS = 15_000;

/**
 * Requests started within this many milliseconds share one timeout signal, so each is cut between
 * DELIVERY_TIMEOUT_MS and this much later, never sooner. A signal and its timer per request were a
 * few percent of a delivery's CPU (issue 28 goal 5).
 */
const TIMEOUT_SHARED_MS = 250;

/** Bytes of a response body kept in the attempt log; the rest is not read. */
export const RESPONSE_EXCERPT_BYTES = 2048;

/** What one POST produced. A network error, timeout or refused address is `error`, with no status. */
export type TransportResult =
  | { ok: true; status: number; headers: Record<string, string | string[] | undefined>; bodyExcerpt: string }
  | { ok: false; error: string; unsafe: boolean };

/** Sends one signed webhook request; injectable so a caller can route deliveries differently. */
export type WebhookTransport = (params: { url: string; headers: Record<string, string>; body: string }) => Promise<TransportResult>;

/**
 * undici's exports, imported once, when first needed. From the sources `import()` gives its named
 * exports; in the bundle (scripts/build.mjs) undici is CommonJS inside an ES chunk, and the
 * namespace holds only `default` (the daemon built so sent no webhook: "Agent is not a
 * constructor"; test/ops/bundledDelivery.test.ts).
 */
const loadUndici = (): Promise<typeof import('undici')> =>
  import('undici').then((module) => ('Agent' in module ? module : (module as unknown as { default: typeof import('undici') }).default));

/**
 * The real transport: undici over a keep-alive agent whose sockets resolve hosts through the
 * SSRF guard; redirects are not followed (a 3xx is a failed attempt), the whole exchange is cut
 * at DELIVERY_TIMEOUT_MS, and at most RESPONSE_EXCERPT_BYTES of the body are read.
 */
export function createHttpTransport(params: GuardParams & { timeoutMs?: number }): WebhookTransport & { close(): Promise<void> } {
  const timeoutMs = params.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  // undici is imported at the first send, not with this module (issue 28): the API imports the
  // delivery stage for its webhook routes but sends nothing itself, and loading undici was about
  // 90 ms of CPU in every API start.
  // One promise per transport, resolved once: a send awaits it and nothing else is loaded per send
  // (an `import()` per send went through the module loader's resolution each time).
  let client: Promise<{ request: typeof import('undici').request; agent: Agent }> | undefined;
  const clientOf = () =>
    (client ??= loadUndici().then(({ Agent, request }) => ({
      request,
      agent: new Agent({
        connect: { lookup: guardedLookup(params) as never, timeout: timeoutMs },
        // Later than the shared signal's latest cut, so the signal alone ends a slow exchange and
        // the attempt says "timed out after …" (undici's own coarse timers raced it).
        headersTimeout: timeoutMs + TIMEOUT_SHARED_MS + 1_000,
        bodyTimeout: timeoutMs + TIMEOUT_SHARED_MS + 1_000,
        // Receivers are many and mostly idle between events: keep sockets briefly, not forever.
        keepAliveTimeout: 10_000,
      }),
    })));

  const deadline = sharedDeadline(timeoutMs);

  const send: WebhookTransport = async ({ url, headers, body }) => {
    try {
      assertLiteralHostAllowed(parseWebhookUrl(url), { allowPrivate: params.allowPrivate });
    } catch (error) {
      return { ok: false, error: (error as Error).message, unsafe: true };
    }
    const signal = deadline();
    try {
      const { request, agent } = await clientOf();
      const response = await request(url, { method: 'POST', headers, body, dispatcher: agent, signal });
      const bodyExcerpt = await readExcerpt(response.body);
      return { ok: true, status: response.statusCode, headers: response.headers, bodyExcerpt };
    } catch (error) {
      const message = signal.aborted ? `timed out after ${timeoutMs} ms` : describe(error);
      return { ok: false, error: message, unsafe: isUnsafeUrlFailure(error) };
    }
  };
  return Object.assign(send, { close: async () => client?.then((made) => made.agent.close()) });
}

/**
 * The abort signal of a request starting now: one per TIMEOUT_SHARED_MS window, firing
 * `timeoutMs` after that window's end. Many requests listen to one signal (undici removes its
 * listener when a request ends), so the listener cap is lifted.
 */
function sharedDeadline(timeoutMs: number): () => AbortSignal {
  let windowEnd = 0;
  let signal: AbortSignal | undefined;
  return () => {
    const now = performance.now();
    if (!signal || now >= windowEnd) {
      windowEnd = now + TIMEOUT_SHARED_MS;
      signal = AbortSignal.timeout(timeoutMs + TIMEOUT_SHARED_MS);
      setMaxListeners(0, signal);
    }
    return signal;
  };
}

/**
 * Whether a failed attempt was the SSRF guard refusing the address (the guard's error, or undici's
 * connect error caused by it): such an attempt is not retried like a network error.
 */
export function isUnsafeUrlFailure(error: unknown): boolean {
  return findCause(error, UnsafeWebhookUrlError) !== undefined;
}

function describe(error: unknown): string {
  const err = error as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const code = err.code ?? err.cause?.code;
  const message = err.cause?.message ?? err.message ?? String(error);
  return code ? `${code}: ${message}` : message;
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_EXCERPT_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
}
