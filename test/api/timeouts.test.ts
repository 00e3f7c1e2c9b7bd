import net from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { loadConfig } from '../../src/internal/config.ts';
import type { ConfigError } from '../../src/internal/errors.ts';

// Slow clients are cut off. The tests set short timeouts through the environment variables
// production reads (loadConfig), so each case takes about a second.
const db = useTestDatabase('http_timeouts');
const apps: FastifyInstance[] = [];
afterAll(() => Promise.all(apps.map((app) => app.close())));

async function listen(env: Record<string, string>): Promise<number> {
  const app = buildApi(db.store, { env });
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as net.AddressInfo).port;
}

/** A raw connection driven by `drive`; resolves when the server closes it (or after `giveUpMs`). */
function hold(port: number, drive: (socket: net.Socket) => void, giveUpMs = 8_000): Promise<{ closed: boolean; afterMs: number; received: string }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const end = (closed: boolean) => {
      clearTimeout(giveUp);
      resolve({ closed, afterMs: Date.now() - started, received });
    };
    const giveUp = setTimeout(() => {
      socket.removeAllListeners('close');
      socket.destroy();
      end(false);
    }, giveUpMs);
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => end(true));
    socket.on('connect', () => drive(socket));
  });
}

/** Writes `text` one byte every `everyMs`, as a slowloris client does, until done or closed. */
function trickle(socket: net.Socket, text: string, everyMs: number): void {
  let index = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || index >= text.length) return clearInterval(timer);
    socket.write(text[index++]!);
  }, everyMs);
}

/** A raw answer's status line and JSON body. */
function parseRaw(received: string): { statusLine: string; headers: string; body: unknown } {
  const [head = '', body = ''] = received.split('\r\n\r\n');
  const [statusLine = '', ...headers] = head.split('\r\n');
  return { statusLine, headers: headers.join('\n').toLowerCase(), body: JSON.parse(body) };
}

const SHORT = { SVC_HTTP_HEADERS_TIMEOUT_MS: '600', SVC_HTTP_REQUEST_TIMEOUT_MS: '1200', SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '500' };

describe('slow clients', () => {
  test('headers sent one byte at a time are cut at the headers timeout with a 408', async () => {
    const port = await listen(SHORT);
    // 200 bytes at one per 100 ms would take 20 s; bytes keep coming, so only the headers timeout ends it.
    const result = await hold(port, (socket) => trickle(socket, `GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(160)}\r\n\r\n`, 100));
    expect(result.closed).toBe(true);
    // The `{"error"}` shape of every other error answer, not fastify's {"error","message","statusCode"}.
    const answer = parseRaw(result.received);
    expect(answer.statusLine).toBe('HTTP/1.1 408 Request Timeout');
    expect(answer.headers).toContain('content-type: application/json');
    expect(answer.headers).toContain('connection: close');
    expect(answer.body).toEqual({ error: 'the request was not received in time' });
    expect(result.afterMs).toBeGreaterThanOrEqual(500);
    expect(result.afterMs).toBeLessThan(2_000);
  });

  test('a connection that sends nothing is closed at the headers timeout too', async () => {
    const port = await listen(SHORT);
    const result = await hold(port, () => {});
    expect(result.closed).toBe(true);
    expect(result.afterMs).toBeLessThan(2_000);
  });

  test('a body sent slower than the request timeout allows is cut with a 408', async () => {
    const port = await listen(SHORT);
    // A public route (no key): the body is read before anything can refuse the request.
    const body = JSON.stringify({ destination: 'x'.repeat(100) });
    const result = await hold(port, (socket) => {
      socket.write(`POST /checkout/ses_slow/refund HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      trickle(socket, body, 100);
    });
    expect(result.closed).toBe(true);
    expect(result.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(parseRaw(result.received).body).toEqual({ error: 'the request was not received in time' });
    expect(result.afterMs).toBeGreaterThanOrEqual(1_100);
    expect(result.afterMs).toBeLessThan(3_000);
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout, once its answer is sent', async () => {
    const port = await listen(SHORT);
    const result = await hold(port, (socket) => socket.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(result.closed).toBe(true);
    expect(result.received).toMatch(/^HTTP\/1\.1 200 /);
    // Node closes an idle kept-alive socket up to a second after the timeout.
    expect(result.afterMs).toBeGreaterThanOrEqual(500);
    expect(result.afterMs).toBeLessThan(3_000);
  });

  test('a socket with no traffic at all is destroyed at the idle timeout, before a longer headers timeout', async () => {
    const port = await listen({
      SVC_HTTP_HEADERS_TIMEOUT_MS: '5000',
      SVC_HTTP_REQUEST_TIMEOUT_MS: '5000',
      SVC_HTTP_IDLE_TIMEOUT_MS: '600',
      SVC_API_DB_TIMEOUT_MS: '500',
    });
    const result = await hold(port, () => {});
    expect(result.closed).toBe(true);
    expect(result.received).toBe('');
    expect(result.afterMs).toBeLessThan(2_000);
  });

  test('a prompt client is unaffected by the short timeouts', async () => {
    const port = await listen(SHORT);
    const answer = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
    expect(answer.status).toBe(200);
  });
});

describe('requests Node refuses before routing', () => {
  test('bytes that are not HTTP get a 400 {"error"} and the connection is closed', async () => {
    const port = await listen(SHORT);
    const result = await hold(port, (socket) => socket.write('HELLO THERE\r\n\r\n'));
    expect(result.closed).toBe(true);
    expect(parseRaw(result.received)).toMatchObject({ statusLine: 'HTTP/1.1 400 Bad Request', body: { error: 'the request is not valid HTTP' } });
  });

  test('headers over Node\'s size limit get a 431 {"error"}', async () => {
    const port = await listen(SHORT);
    const result = await hold(port, (socket) => socket.write(`GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(result.closed).toBe(true);
    expect(parseRaw(result.received)).toMatchObject({
      statusLine: 'HTTP/1.1 431 Request Header Fields Too Large',
      body: { error: 'the request headers are too large' },
    });
  });
});

describe('configuration', () => {
  test('defaults: headers 10 s, request 30 s, idle 120 s, keep-alive 72 s', () => {
    expect(loadConfig({}).httpTimeouts).toEqual({ headersMs: 10_000, requestMs: 30_000, idleMs: 120_000, keepAliveMs: 72_000 });
  });

  test('bad values and contradictions are refused at start-up, naming the variables', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems({ SVC_HTTP_HEADERS_TIMEOUT_MS: '10s' })).toEqual([
      'SVC_HTTP_HEADERS_TIMEOUT_MS="10s": must be a whole number of milliseconds from 100 to 3600000',
    ]);
    expect(problems({ SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' })[0]).toMatch(/^SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS="0"/);
    expect(problems({ SVC_HTTP_HEADERS_TIMEOUT_MS: '40000' })).toEqual([
      'SVC_HTTP_HEADERS_TIMEOUT_MS (40000) must not exceed SVC_HTTP_REQUEST_TIMEOUT_MS (30000)',
    ]);
    expect(problems({ SVC_API_DB_TIMEOUT_MS: '120000' })[0]).toMatch(/^SVC_HTTP_IDLE_TIMEOUT_MS \(120000\) must exceed SVC_API_DB_TIMEOUT_MS \(120000\)/);
  });
});
