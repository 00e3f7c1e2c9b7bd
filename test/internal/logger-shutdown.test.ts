import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { createLogger } from '../../src/internal/logger.ts';
import { createShutdown, sleep } from '../../src/internal/shutdown.ts';

describe('createLogger()', () => {
  test('writes JSON lines and redacts keys and secrets wherever they appear', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk) => lines.push(...String(chunk).trim().split('\n')));
    const logger = createLogger({ level: 'info', destination: stream });
    logger.info({
      msg: 'Delivered',
      event_id: 'evt_1',
      secret: 'whsec_abc',
      headers: { authorization: 'Bearer svc_live_abc', 'x-api-key': 'svc_sk_abc' },
      endpoint: { secret: 'whsec_def' },
    });
    await new Promise((resolve) => setImmediate(resolve));
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ level: 'info', msg: 'Delivered', event_id: 'evt_1', service: 'svc-gateway' });
    expect(lines[0]).not.toMatch(/whsec_|svc_live_|svc_sk_/);
    expect(line.headers).toEqual({ authorization: '[redacted]', 'x-api-key': '[redacted]' });
  });
});

describe('createShutdown()', () => {
  test('kill() aborts the signal first, then closes parts in reverse order, once', async () => {
    const shutdown = createShutdown();
    const order: string[] = [];
    shutdown.add('database', () => void order.push(`database aborted=${shutdown.signal.aborted}`));
    shutdown.add('api', async () => {
      await sleep(20);
      order.push('api drained');
    });
    const first = shutdown.kill('SIGTERM');
    const second = shutdown.kill('SIGINT');
    expect(second).toBe(first);
    await first;
    expect(order).toEqual(['api drained', 'database aborted=true']);
    expect(shutdown.signal.reason).toBe('SIGTERM');
  });

  test('a failing close is reported and the rest still close', async () => {
    const errors: string[] = [];
    const shutdown = createShutdown({ onError: (name) => errors.push(name) });
    let closed = false;
    shutdown.add('store', () => void (closed = true));
    shutdown.add('worker', () => {
      throw new Error('boom');
    });
    await shutdown.kill();
    expect(errors).toEqual(['worker']);
    expect(closed).toBe(true);
  });

  test('sleep() ends early when the signal aborts', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 10);
    await sleep(10_000, controller.signal);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
