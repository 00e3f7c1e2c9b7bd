/**
 * The fuzzing run (issue 30, run 5), shared by bench/chaos/fuzz.ts (100,000 requests, the figure)
 * and test/chaos/fuzz.test.ts (a short run in `npm test`): requests generated from the daemon's
 * own OpenAPI document (fuzzRequests.ts) sent to a gateway process. The audit: no 5xx, every 4xx
 * exactly `{"error": "…"}`, no request left unanswered, every operation exercised, and the daemon
 * process never exits (same pid, healthy at the end).
 */
import fc from 'fast-check';
import { Pool } from 'undici';
import { createStore, type Store } from '../../../src/store/index.ts';
import { answerDefect, makeKeyRing, newEncryptionKey, spreadAddress, startGatewayProcess, type KeyRing } from './apiAudit.ts';
import { operationsOf, requestFor, type FuzzRequest } from './fuzzRequests.ts';
import type { IdPool } from './fuzzValues.ts';

export interface FuzzOptions {
  /** A migrated or empty database the run may fill (the daemon migrates it). */
  databaseUrl: string;
  requests: number;
  concurrency: number;
  seed: number;
  log?: (line: string) => void;
}

export interface FuzzReport {
  defects: Array<{ defect: string; count: number; example: string }>;
  sent: number;
  /** Requests the HTTP client itself refused to send (an invalid header or path); not counted in `sent`. */
  unsendable: number;
  /** 503s (a database wait ran out) answered on the retry a second later: load, not input. */
  transient503: number;
  /** Requests sent a second time because the pooled connection was lost under them (each answered the second time). */
  resent: number;
  statuses: Record<string, number>;
  operations: number;
  /** Requests per operation, fewest first (a few). */
  leastCovered: Array<[string, number]>;
  /** Operations that answered 2xx at least once. */
  operationsWith2xx: number;
  daemonExits: number;
  durationMs: number;
  seed: number;
}

const BATCH = 250;

/** Operations that serve HTML pages to payers (the checkout, the receipt, a payment link). */
const PAGES = /^GET \/(checkout\/\{sessionId\}(\/receipt)?|pay\/\{linkId\})$/;

/** Ids of objects of both merchants, by prefix, so generated paths and fields name real ones. */
async function idPool(store: Store): Promise<IdPool> {
  const { rows } = await store.query<{ id: string }>(
    `(SELECT id FROM payment_sessions ORDER BY created_at DESC LIMIT 40) UNION ALL (SELECT id FROM payment_links LIMIT 20)
     UNION ALL (SELECT id FROM webhook_endpoints LIMIT 20) UNION ALL (SELECT id FROM events ORDER BY created_at DESC LIMIT 40)
     UNION ALL (SELECT id FROM refunds LIMIT 20) UNION ALL (SELECT id FROM wallets LIMIT 20)`,
  );
  const byPrefix = new Map<string, string[]>();
  for (const { id } of rows) {
    const prefix = id.split('_')[0]!;
    byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), id]);
  }
  return { byPrefix, all: rows.map((row) => row.id) };
}

/** A few real objects for each merchant: a paid sandbox session (with events), a link, an endpoint. */
async function seedObjects(url: string, keys: string[]): Promise<void> {
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-for': spreadAddress() },
      body: JSON.stringify(body),
    });
    return response.json() as Promise<any>;
  };
  const payment = { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' };
  for (const key of keys) {
    const session = await call(key, 'POST', '/api/v1/payments', payment);
    await call(key, 'POST', `/api/v1/sandbox/sessions/${session.id}/pay`, { outcome: 'overpaid' });
    await call(key, 'POST', '/api/v1/payment-links', payment);
    await call(key, 'POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook' });
  }
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(request: FuzzRequest): string {
  const body = request.body === undefined ? '' : ` body ${JSON.stringify(request.body.toString().slice(0, 300))}`;
  const headers = Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [
      name,
      name === 'authorization' || name === 'x-api-key' ? `${value.slice(0, 16)}…` : value.slice(0, 80),
    ]),
  );
  return `${request.method} ${request.path.slice(0, 300)} ${JSON.stringify(headers)}${body}`;
}

/** Errors of a connection lost under a request, as undici reports them. */
const CONNECTION_LOST = new Set(['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET']);

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const key = newEncryptionKey();
  // Webhook registration resolves hosts: only loopback is reachable (sandbox endpoints), so no
  // generated URL waits on a DNS server or reaches anything.
  const daemon = await startGatewayProcess({ databaseUrl: options.databaseUrl, encryptionKey: key.hex, env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'sandbox' } });
  const store = createStore({ connectionString: options.databaseUrl, max: 2 });
  const pool = new Pool(daemon.url, { connections: options.concurrency, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const defects = new Map<string, { count: number; example: string }>();
  const statuses: Record<string, number> = {};
  const perOperation = new Map<string, number>();
  const with2xx = new Set<string>();
  let sent = 0;
  let unsendable = 0;
  let transient503 = 0;
  let resent = 0;
  const note = (defect: string, request: FuzzRequest) => {
    const entry = defects.get(`${defect} | ${request.operation}`);
    if (entry) entry.count++;
    else {
      defects.set(`${defect} | ${request.operation}`, { count: 1, example: describe(request) });
      log(`  defect: ${defect} | ${request.operation}\n    e.g. ${describe(request)}`);
    }
  };
  try {
    const ring: KeyRing = await makeKeyRing(store, key.box);
    await seedObjects(daemon.url, [ring.test, ring.otherMerchant]);
    const document = (await (await fetch(`${daemon.url}/api/v1/openapi.json`)).json()) as Parameters<typeof operationsOf>[0];
    const operations = operationsOf(document);
    for (const operation of operations) perOperation.set(`${operation.method} ${operation.template}`, 0);
    log(
      `daemon pid ${daemon.pid}; ${operations.length} operations in the document; ${options.requests} requests, ${options.concurrency} at once, seed ${options.seed}`,
    );

    // Built again every 20 batches with the ids the run has made since (building takes seconds).
    let arbitrary: fc.Arbitrary<FuzzRequest> | undefined;
    for (let batch = 0; sent + unsendable < options.requests; batch++) {
      if (batch % 20 === 0) {
        const ids = await idPool(store);
        arbitrary = fc.oneof(...operations.map((operation) => requestFor(operation, ring, ids)));
      }
      const requests = fc.sample(arbitrary!, { numRuns: Math.min(BATCH, options.requests - sent - unsendable), seed: options.seed + batch });
      let next = 0;
      const worker = async () => {
        for (let index = next++; index < requests.length; index = next++) {
          const request = requests[index]!;
          const send = () =>
            pool.request({
              method: request.method as 'GET',
              path: request.path,
              headers: { ...request.headers, 'x-forwarded-for': spreadAddress() },
              ...(request.body !== undefined ? { body: request.body } : {}),
            });
          let response: Awaited<ReturnType<typeof send>>;
          try {
            try {
              response = await send();
            } catch (error) {
              // A connection the pool reused can be gone as the request is written (EPIPE,
              // ECONNRESET: seen once in CI with the machine saturated). Sent again, the lost
              // connection gone from the pool: an input that makes the daemon drop its connection drops it again.
              if (!CONNECTION_LOST.has((error as { code?: string }).code ?? '')) throw error;
              resent++;
              response = await send();
            }
            // A 503 says a database wait ran out (the machine is shared and loaded): the same
            // request again a second later must be answered, or the 503 is the input's doing.
            if (response.statusCode === 503 && response.headers['retry-after']) {
              transient503++;
              await response.body.dump();
              await new Promise((resolve) => setTimeout(resolve, 1_000));
              response = await send();
            }
          } catch (error) {
            const code = (error as { code?: string }).code ?? '';
            // undici refuses some generated headers and paths before sending: not the server's doing.
            if (code === 'UND_ERR_INVALID_ARG' || error instanceof TypeError) {
              unsendable++;
              continue;
            }
            sent++;
            note(`no answer (${code || (error as Error).message})`, request);
            continue;
          }
          sent++;
          perOperation.set(request.operation, (perOperation.get(request.operation) ?? 0) + 1);
          const status = response.statusCode;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status < 400) {
            if (status < 300) with2xx.add(request.operation);
            // An open event stream (the checkout's) never ends: its headers are the answer.
            // Destroying it makes undici emit an abort error on the body: heard here, not a crash.
            if (String(response.headers['content-type']).includes('event-stream')) response.body.on('error', () => {}).destroy();
            else await response.body.dump();
            continue;
          }
          const body = await response.body.text().catch((error) => `(body unreadable: ${error})`);
          // The checkout and payment-link pages are for people: their 404 is an HTML page.
          const page = request.method === 'GET' && PAGES.test(request.operation) && String(response.headers['content-type']).startsWith('text/html');
          // x402's 402 is the protocol's PaymentRequired object ({x402Version, error, accepts}), not ours to reshape.
          const x402 = status === 402 && request.operation.endsWith('/x402') && typeof safeJson(body)?.error === 'string';
          const defect = page || x402 ? undefined : answerDefect({ status, body, method: request.method });
          if (defect) note(`${defect}: ${body.slice(0, 120)}`, request);
          // The daemon's own account of a 5xx (its error log line), for the report.
          if (status >= 500)
            log(
              `    daemon log: ${daemon.recentLogs
                .filter((line) => line.includes('"level":50') || line.includes('rror'))
                .slice(-2)
                .join('\n    ')}`,
            );
        }
      };
      await Promise.all(Array.from({ length: options.concurrency }, worker));
      if (daemon.exits.length > 0) break;
      if (batch % 40 === 0) log(`  ${sent} sent, ${defects.size} kinds of defect, ${Math.round(sent / ((performance.now() - started) / 1000))} requests/s`);
    }
    if (daemon.exits.length > 0) {
      defects.set('the daemon exited', { count: daemon.exits.length, example: `${JSON.stringify(daemon.exits)}\n${daemon.recentLogs.slice(-10).join('\n')}` });
    }
    const health = await fetch(`${daemon.url}/api/v1/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (health !== 200) defects.set(`/health answers ${health} after the run`, { count: 1, example: '' });
    for (const [operation, count] of perOperation) if (count === 0) defects.set(`operation never exercised: ${operation}`, { count: 1, example: '' });
    return {
      defects: [...defects].map(([defect, entry]) => ({ defect, ...entry })).sort((a, b) => b.count - a.count),
      sent,
      unsendable,
      transient503,
      resent,
      statuses,
      operations: operations.length,
      leastCovered: [...perOperation].sort((a, b) => a[1] - b[1]).slice(0, 5),
      operationsWith2xx: with2xx.size,
      daemonExits: daemon.exits.length,
      durationMs: Math.round(performance.now() - started),
      seed: options.seed,
    };
  } finally {
    await pool.close().catch(() => {});
    await daemon.stop();
    await store.close();
  }
}
