import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, WebhookVerificationError } from '../../receiver/verify.ts';

/** The largest delivery body the listener reads; events are a few KiB. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface ListenParams {
  /** Base of the daemon's API, e.g. http://127.0.0.1:8080. */
  apiUrl: string;
  apiKey: string;
  port: number;
  /** Event kinds to subscribe to; default all. */
  events?: string[];
  /** One line per delivery (and the start-up banner). */
  print: (line: string, data: Record<string, unknown>) => void;
  stop: Promise<unknown>;
}

async function api(params: ListenParams, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${params.apiUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${params.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${String(json.error ?? text)}`);
  return json;
}

/**
 * `svc webhooks listen`: a local receiver for development. It registers an endpoint pointing at
 * itself (with the key's mode: a test key listens to sandbox events), verifies every delivery
 * with `verifyWebhook` exactly as a merchant's backend should, prints it, answers 200 (400 when
 * verification fails), and deletes the endpoint when stopped.
 */
export async function listenForWebhooks(params: ListenParams): Promise<void> {
  let secret = '';
  let livemode: boolean | undefined;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        // The endpoint's mode: a sandbox listener refuses a live event and the other way round.
        const event = await verifyWebhook(body, request.headers, secret, livemode === undefined ? {} : { livemode });
        const envelope = JSON.parse(body) as { id: string; event: string; data: Record<string, unknown>; livemode: boolean };
        params.print(
          `✓ ${envelope.event.padEnd(24)} ${envelope.id}  ${String(envelope.data.id ?? '')}  status=${String(envelope.data.status ?? '')}  signature verified`,
          {
            verified: true,
            event: event,
          },
        );
        response.writeHead(200).end();
      } catch (error) {
        const reason = error instanceof WebhookVerificationError ? error.reason : 'malformed_body';
        params.print(`✗ rejected delivery: ${(error as Error).message}`, { verified: false, reason });
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(params.port, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/webhooks`;
  try {
    const endpoint = await api(params, 'POST', '/webhooks', {
      url,
      description: 'svc webhooks listen',
      ...(params.events ? { enabledEvents: params.events } : {}),
    });
    secret = String(endpoint.secret);
    livemode = endpoint.livemode === true;
    params.print(`Listening on ${url} as endpoint ${String(endpoint.id)} (${endpoint.livemode ? 'live' : 'sandbox'} events); Ctrl-C to stop`, {
      listening: url,
      endpointId: endpoint.id,
      livemode: endpoint.livemode,
    });
    await params.stop;
    await api(params, 'DELETE', `/webhooks/${String(endpoint.id)}`).catch(() => {});
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}
