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
