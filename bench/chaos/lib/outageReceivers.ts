/**
 * The webhook receivers of the receiver-outage run (receiverOutageRun.ts): real HTTP servers on
 * loopback whose answer the run switches (up: 200, down: 500 or a reset connection, gone: 410),
 * recording every delivery they accept with the simulated time it arrived.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverMode = 'up' | 'down-500' | 'down-reset' | 'gone';

/** A delivery a receiver accepted (answered 200). */
export interface Received {
  eventId: string;
  deliveryId: string;
  /** The `seq` the run put in the event's data: one logical event, whatever its id. */
  seq: number;
  /** Simulated time it arrived. */
  at: number;
}

export interface OutageReceiver {
  url: string;
  mode: ReceiverMode;
  accepted: Received[];
  /** Requests answered with a failure (any mode but up). */
  refused: number;
  close(): Promise<void>;
}

export async function startOutageReceiver(now: () => number): Promise<OutageReceiver> {
  const receiver: OutageReceiver = { url: '', mode: 'up', accepted: [], refused: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (receiver.mode === 'down-reset') {
        receiver.refused++;
        req.socket.destroy();
        return;
      }
      if (receiver.mode !== 'up') {
        receiver.refused++;
        res.writeHead(receiver.mode === 'gone' ? 410 : 500).end('no');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      receiver.accepted.push({ eventId: body.id, deliveryId: String(req.headers['x-service-delivery-id']), seq: Number(body.data?.seq ?? -1), at: now() });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
