import type dns from 'node:dns';
import { describe, expect, test } from 'vitest';
import { createHttpTransport, isUnsafeUrlFailure } from '../../src/delivery/transport.ts';
import { UnsafeWebhookUrlError } from '../../src/delivery/ssrf.ts';

// Whether a failed attempt was the SSRF guard's refusal (recorded as unsafe, not retried like a
// network error) is decided from the error's class, wherever undici put it in the cause chain.
describe('isUnsafeUrlFailure()', () => {
  test("the guard's error, or any error caused by it, is an unsafe-URL failure", () => {
    const refusal = new UnsafeWebhookUrlError('hook.test resolves to a private, loopback or link-local address');
    expect(isUnsafeUrlFailure(refusal)).toBe(true);
    expect(isUnsafeUrlFailure(new TypeError('fetch failed', { cause: refusal }))).toBe(true);
    expect(isUnsafeUrlFailure(new Error('outer', { cause: new Error('middle', { cause: refusal }) }))).toBe(true);
  });

  test('a network error is not, nor is an error that only carries the name', () => {
    expect(isUnsafeUrlFailure(Object.assign(new Error('connect ECONNREFUSED 203.0.113.9:443'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isUnsafeUrlFailure(Object.assign(new Error('looks like it'), { name: 'UnsafeWebhookUrlError' }))).toBe(false);
    expect(isUnsafeUrlFailure(new Error('wrapped look-alike', { cause: Object.assign(new Error('x'), { name: 'UnsafeWebhookUrlError' }) }))).toBe(false);
    expect(isUnsafeUrlFailure(undefined)).toBe(false);
  });
});

/** dns.lookup's shape: `inside.test` resolves to loopback, every other name to nothing. */
const lookup = ((hostname: string, _options: dns.LookupOptions, callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => {
  if (hostname === 'inside.test') return callback(null, [{ address: '127.0.0.1', family: 4 }]);
  callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
}) as unknown as typeof dns.lookup;

describe('createHttpTransport()', () => {
  test('a refused address is an unsafe failure; a name that does not resolve is an ordinary one', async () => {
    const transport = createHttpTransport({ allowPrivate: false, lookup, timeoutMs: 2_000 });
    try {
      const send = (url: string) => transport({ url, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(await send('http://inside.test:9/hook')).toEqual({
        ok: false,
        unsafe: true,
        error: 'inside.test resolves to a private, loopback or link-local address',
      });
      expect(await send('http://nowhere.test:9/hook')).toMatchObject({ ok: false, unsafe: false, error: expect.stringContaining('ENOTFOUND') });
    } finally {
      await transport.close();
    }
  });
});

// Requests started close together share one timeout signal (TIMEOUT_SHARED_MS in transport.ts,
// 250 ms): each is still cut no sooner than the timeout after its own start, and not much later,
// whether it shares a window (0 and 100 ms), opens a new one (300 ms), or starts after the first
// window's signal has fired (at 650 ms; this one starts at 800).
describe('createHttpTransport() timeouts', () => {
  test('requests in one window, in the next, and after a fired signal each time out on their own clock', async () => {
    const http = await import('node:http');
    const hanging: import('node:http').ServerResponse[] = [];
    const server = http.createServer((_request, response) => hanging.push(response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as import('node:net').AddressInfo;
    const transport = createHttpTransport({ allowPrivate: true, timeoutMs: 400 });
    try {
      const timed = async (delayMs: number) => {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        const started = performance.now();
        const result = await transport({ url: `http://127.0.0.1:${port}/hang`, headers: { 'content-type': 'application/json' }, body: '{}' });
        return { result, elapsed: performance.now() - started };
      };
      const outcomes = await Promise.all([timed(0), timed(100), timed(300), timed(800)]);
      for (const { result, elapsed } of outcomes) {
        expect(result).toEqual({ ok: false, unsafe: false, error: 'timed out after 400 ms' });
        expect(elapsed).toBeGreaterThanOrEqual(395); // timers may fire a millisecond early
        expect(elapsed).toBeLessThan(400 + 250 + 1_000); // the shared window, and a loaded machine
      }
    } finally {
      await transport.close();
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
