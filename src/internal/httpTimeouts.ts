/**
 * How long the HTTP server waits for a client, so one that trickles its headers or body (or sends
 * nothing) cannot hold a connection and its memory for ever. docs/security.md ("Input and network
 * hardening") gives the reason for each default.
 */
export interface HttpTimeouts {
  /** From a request's first byte until its headers are complete (else 408 and close). */
  headersMs: number;
  /** From a request's first byte until its body is complete (else 408 and close); never limits the answer. */
  requestMs: number;
  /** A socket with no traffic either way while a request is handled or answered is destroyed. */
  idleMs: number;
  /** An idle connection between two requests is closed (must exceed the load balancer's idle timeout). */
  keepAliveMs: number;
}

const MAX_MS = 3_600_000;

function parseMs(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 100 || Number(raw) > MAX_MS) throw new Error(`must be a whole number of milliseconds from 100 to ${MAX_MS}`);
  return Number(raw);
}

/** The variables, spread into config.ts's VARIABLES (so docs/configuration.md's table and `svc config` list them). */
export const HTTP_TIMEOUT_VARIABLES = {
  httpHeadersTimeoutMs: {
    name: 'SVC_HTTP_HEADERS_TIMEOUT_MS',
    doc: "Milliseconds a client has to send a request's headers, from its first byte; then 408 and the connection is closed. At most SVC_HTTP_REQUEST_TIMEOUT_MS",
    default: '10000',
    parse: parseMs,
  },
  httpRequestTimeoutMs: {
    name: 'SVC_HTTP_REQUEST_TIMEOUT_MS',
    doc: 'Milliseconds a client has to send a whole request, headers and body; then 408 and the connection is closed. The answer is not limited by it',
    default: '30000',
    parse: parseMs,
  },
  httpIdleTimeoutMs: {
    name: 'SVC_HTTP_IDLE_TIMEOUT_MS',
    doc: 'Milliseconds without any traffic on a connection while a request is handled or answered; then the connection is destroyed. Above SVC_API_DB_TIMEOUT_MS, so a request waiting on the database gets its 503',
    default: '120000',
    parse: parseMs,
  },
  httpKeepAliveTimeoutMs: {
    name: 'SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS',
    doc: "Milliseconds an idle keep-alive connection stays open between requests. Keep it above your load balancer's idle timeout (60 s on AWS ALB), so the balancer closes first and never sends to a closing connection",
    default: '72000',
    parse: parseMs,
  },
};

/** Defaults, for callers that build a Config by hand. */
export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, idleMs: 120_000, keepAliveMs: 72_000 };

type Read = <T>(variable: { name: string; doc: string; default: string | undefined; parse: (raw: string) => T }) => T | undefined;

/** Reads the four variables with loadConfig's `read` (which records bad values). */
export function readHttpTimeouts(read: Read): HttpTimeouts {
  const v = HTTP_TIMEOUT_VARIABLES;
  const d = DEFAULT_HTTP_TIMEOUTS;
  return {
    headersMs: read(v.httpHeadersTimeoutMs) ?? d.headersMs,
    requestMs: read(v.httpRequestTimeoutMs) ?? d.requestMs,
    idleMs: read(v.httpIdleTimeoutMs) ?? d.idleMs,
    keepAliveMs: read(v.httpKeepAliveTimeoutMs) ?? d.keepAliveMs,
  };
}

/** Problems between the timeouts and the API's database wait, each naming the variables. */
export function httpTimeoutProblems(timeouts: HttpTimeouts, apiDbTimeoutMs: number): string[] {
  const problems: string[] = [];
  // Node refuses a headers timeout above the request timeout (the whole request includes the headers).
  if (timeouts.headersMs > timeouts.requestMs)
    problems.push(`SVC_HTTP_HEADERS_TIMEOUT_MS (${timeouts.headersMs}) must not exceed SVC_HTTP_REQUEST_TIMEOUT_MS (${timeouts.requestMs})`);
  // A socket idle past it is destroyed mid-request, with no answer while the handler may still commit.
  if (timeouts.idleMs <= apiDbTimeoutMs)
    problems.push(
      `SVC_HTTP_IDLE_TIMEOUT_MS (${timeouts.idleMs}) must exceed SVC_API_DB_TIMEOUT_MS (${apiDbTimeoutMs}): a request waiting on the database would lose its connection instead of getting a 503`,
    );
  return problems;
}

/**
 * How often Node looks for requests past the headers or request timeout (its default, 30 s,
 * would let a 10 s limit run to 40 s): a tenth of the headers timeout, from 50 ms to 1 s.
 */
export function connectionsCheckingIntervalMs(timeouts: HttpTimeouts): number {
  return Math.max(50, Math.min(1_000, Math.floor(timeouts.headersMs / 10)));
}

/** Node's `http.Server` options for `timeouts`: the headers and request limits, and how often Node checks them. */
export function nodeServerTimeouts(timeouts: HttpTimeouts): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  return { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: connectionsCheckingIntervalMs(timeouts) };
}
