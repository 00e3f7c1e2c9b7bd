import { getEventListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { expect, test } from 'vitest';
import { WebSocketServer } from 'ws';
import { createHeadSignal } from '../../../src/ingest/evm/heads.ts';
import { createLogger } from '../../../src/internal/logger.ts';
import { waitFor } from '../../helpers/waitFor.ts';

// A newHeads WebSocket that keeps dropping: each loss must lead to a new socket and a new
// subscription (viem kept the closed socket client of the URL, so the chain fell back to polling
// for good after the first drop), and leave the daemon's stop signal as it found it (a daemon
// reconnects for weeks; one listener per reconnect was a leak and MaxListenersExceededWarning).
test('a dropped newHeads subscription is opened again on a new socket, and leaves no listener behind', async () => {
  let connections = 0;
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  server.on('connection', (socket) => {
    connections += 1;
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as { id: number; method: string };
      if (request.method !== 'eth_subscribe') return;
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: '0x1' }));
      // One head (so the reconnect delay stays at its first step), then the connection drops.
      socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0x1', result: { number: '0x1' } } }));
      setTimeout(() => socket.terminate(), 20);
    });
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const stop = new AbortController();
  try {
    createHeadSignal({
      chain: 'polygon',
      wsUrls: [`ws://127.0.0.1:${(server.address() as AddressInfo).port}`],
      logger: createLogger({ level: 'silent' }),
      signal: stop.signal,
    });
    const counts: number[] = [];
    for (let drop = 1; drop <= 3; drop++) {
      await waitFor(async () => connections > drop, `reconnect ${drop}`, 10_000);
      counts.push(getEventListeners(stop.signal, 'abort').length);
    }
    // Between subscriptions: the head signal's own listener, plus the reconnect's sleep at most.
    expect(counts.every((count) => count <= 2)).toBe(true);
  } finally {
    stop.abort();
    await new Promise((resolve) => server.close(resolve));
  }
}, 30_000);

// An ingester run can end while the daemon's signal stays up (a lost lease whose connection did
// not die, a refused run): it closes its head signal, and a new run makes another. The closed
// one must let go of its socket, or every such run left a subscription reconnecting for good.
test('close() ends the subscription and its socket, also when called while it is still connecting', async () => {
  let open = 0;
  let subscribes = 0;
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  server.on('connection', (socket) => {
    open += 1;
    socket.on('close', () => (open -= 1));
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as { id: number; method: string };
      if (request.method === 'eth_subscribe') subscribes += 1;
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: request.method === 'eth_subscribe' ? '0x1' : true }));
    });
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const stop = new AbortController();
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const subscribed = createHeadSignal({ chain: 'polygon', wsUrls: [url], logger: createLogger({ level: 'silent' }), signal: stop.signal });
    await waitFor(async () => subscribed.subscribed, 'the subscription', 10_000);
    subscribed.close();
    await waitFor(async () => open === 0, 'the socket closed after close()', 10_000);
    // Closed as soon as made: the subscription still completes, then lets go at once.
    const early = createHeadSignal({ chain: 'polygon', wsUrls: [url], logger: createLogger({ level: 'silent' }), signal: stop.signal });
    early.close();
    await waitFor(async () => subscribes === 2 || undefined, 'the second subscription', 10_000);
    await waitFor(async () => open === 0, 'the socket closed after an early close()', 10_000);
    expect(stop.signal.aborted).toBe(false);
  } finally {
    stop.abort();
    await new Promise((resolve) => server.close(resolve));
  }
}, 40_000);

test('waits ended by heads leave no poll timer or abort listener behind', async () => {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as { id: number; method: string };
      if (request.method !== 'eth_subscribe') return;
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: '0x1' }));
      // A fast chain: a head every 5 ms, far within the ingester's poll interval.
      let number = 0;
      const ticker = setInterval(() => {
        if (socket.readyState !== socket.OPEN) return clearInterval(ticker);
        number += 1;
        socket.send(
          JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0x1', result: { number: `0x${number.toString(16)}` } } }),
        );
      }, 5);
    });
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const stop = new AbortController();
  try {
    const heads = createHeadSignal({
      chain: 'polygon',
      wsUrls: [`ws://127.0.0.1:${(server.address() as AddressInfo).port}`],
      logger: createLogger({ level: 'silent' }),
      signal: stop.signal,
    });
    await waitFor(async () => heads.subscribed, 'subscribed', 10_000);
    const started = Date.now();
    for (let i = 0; i < 30; i++) await heads.wait(60_000);
    // Thirty heads ended thirty waits well before the poll interval...
    expect(Date.now() - started).toBeLessThan(30_000);
    // ...and each took its timer and listener with it: the head signal's own listener and the
    // subscription's are all that is left on the daemon's signal.
    expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(2);
  } finally {
    stop.abort();
    await new Promise((resolve) => server.close(resolve));
  }
}, 40_000);
