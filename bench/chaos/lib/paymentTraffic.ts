/**
 * Steady sandbox payment traffic against a gateway process, and the webhook receiver that counts
 * what it is told, for the database-pressure run: every answer is kept (status, Retry-After,
 * latency, body) for the audit, and every session the API said it created is paid until the
 * sandbox accepts the payment.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { answerDefect, spreadAddress } from './apiAudit.ts';

export const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** One answer of the API as the audit reads it. */
export interface Answer {
  /** When the request was sent and answered (epoch ms). */
  sentAt: number;
  at: number;
  method: string;
  route: string;
  status: number;
  retryAfter: string | undefined;
  ms: number;
  body: string;
  /** The fault in place when the request was sent, or undefined. */
  fault: string | undefined;
}

/** A webhook receiver on loopback that records every delivery's event id. */
export interface Receiver {
  url: string;
  /** Event id -> deliveries received with it. */
  received: Map<string, number>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const id = JSON.parse(Buffer.concat(chunks).toString('utf8')).id as string;
        received.set(id, (received.get(id) ?? 0) + 1);
      } catch {}
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Sends requests to the gateway as a merchant's backend would, recording every answer. */
export function createTraffic(params: { baseUrl: string; key: string; requestTimeoutMs: number }) {
  const answers: Answer[] = [];
  /** Sessions the API answered 2xx for, in order. */
  const created: string[] = [];
  /** Sessions whose sandbox payment was accepted. */
  const paid = new Set<string>();
  let fault: string | undefined;
  let stopped = false;

  async function call(method: 'GET' | 'POST', route: string, path: string, body?: unknown): Promise<Answer> {
    const started = performance.now();
    const sentAt = Date.now();
    const headers: Record<string, string> = { authorization: `Bearer ${params.key}`, 'x-forwarded-for': spreadAddress() };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const sentUnder = fault;
    let answer: Answer;
    try {
      const response = await request(`${params.baseUrl}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        headersTimeout: params.requestTimeoutMs,
        bodyTimeout: params.requestTimeoutMs,
      });
      const text = await response.body.text();
      const retryAfter = response.headers['retry-after'];
      answer = {
        sentAt,
        at: Date.now(),
        method,
        route,
        status: response.statusCode,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        ms: performance.now() - started,
        body: text,
        fault: sentUnder,
      };
    } catch (error) {
      // No answer within the bound (a hang) or no connection: status 0, a defect for the audit.
      answer = {
        sentAt,
        at: Date.now(),
        method,
        route,
        status: 0,
        retryAfter: undefined,
        ms: performance.now() - started,
        body: String(error),
        fault: sentUnder,
      };
    }
    answers.push(answer);
    return answer;
  }

  /** Pays every created session not paid yet; a refused payment (503) is tried on the next round. */
  async function payPending(): Promise<void> {
    for (const id of created) {
      if (paid.has(id) || stopped) continue;
      const answer = await call('POST', 'POST /sandbox/sessions/{id}/pay', `/api/v1/sandbox/sessions/${id}/pay`, { outcome: 'exact' });
      // 409: an earlier attempt went through though its answer did not (never seen, but safe).
      if (answer.status === 200 || answer.status === 409) paid.add(id);
      else return;
    }
  }

  /** One round: create a session, read it, pay what is unpaid. */
  async function round(n: number): Promise<void> {
    const answer = await call('POST', 'POST /payments', '/api/v1/payments', {
      amount: '1.25',
      currency: 'USDC',
      chain: 'base',
      merchantWallet: WALLET,
      metadata: { chaos: String(n) },
    });
    if (answer.status === 201 || answer.status === 200) {
      const id = JSON.parse(answer.body).id as string;
      created.push(id);
      await call('GET', 'GET /payments/{id}', `/api/v1/payments/${id}`);
    } else {
      await call('GET', 'GET /payments', '/api/v1/payments?limit=5');
    }
    await payPending();
  }

  let loop: Promise<void> | undefined;
  return {
    answers,
    created,
    paid,
    /** One read of the session list: a probe the run sends beside the rounds, its answer recorded with theirs. */
    probe(): Promise<Answer> {
      return call('GET', 'GET /payments', '/api/v1/payments?limit=5');
    },
    /** Marks the answers that follow as sent under `name` (undefined: no fault). */
    setFault(name: string | undefined) {
      fault = name;
    },
    /** Runs rounds every `intervalMs` (plus the time a round takes) until `stop`. */
    start(intervalMs: number) {
      loop = (async () => {
        for (let n = 0; !stopped; n++) {
          await round(n);
          await new Promise((resolve) => setTimeout(resolve, intervalMs));
        }
      })();
    },
    async stop() {
      stopped = true;
      await loop;
    },
    /** After the run: pays what is left, with as many rounds as needed within `ms`. */
    async finishPayments(ms: number) {
      stopped = false;
      const deadline = Date.now() + ms;
      while (paid.size < created.length && Date.now() < deadline) {
        await payPending();
        if (paid.size < created.length) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      stopped = true;
    },
  };
}

/** The defects among the answers: a 5xx other than 503, a 503 without Retry-After, a bad error body, a hang past `boundMs`. */
export function answerDefects(answers: Answer[], boundMs: number): string[] {
  const defects: string[] = [];
  for (const answer of answers) {
    const where = `${answer.route} under ${answer.fault ?? 'no fault'}`;
    if (answer.status === 0) defects.push(`${where}: no answer (${answer.body.slice(0, 200)}) after ${Math.round(answer.ms)} ms`);
    else {
      const defect = answerDefect(answer, { status503: true });
      if (defect) defects.push(`${where}: ${defect}: ${answer.body.slice(0, 300)}`);
      if (answer.status === 503 && !answer.retryAfter) defects.push(`${where}: a 503 without Retry-After`);
    }
    if (answer.ms > boundMs) defects.push(`${where}: answered after ${Math.round(answer.ms)} ms (bound ${boundMs} ms)`);
  }
  return defects;
}
