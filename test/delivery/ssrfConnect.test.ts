import type dns from 'node:dns';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { checkWebhookUrl, createEndpoint, createHttpTransport } from '../../src/delivery/index.ts';
import type { AllowPrivate } from '../../src/delivery/ssrf.ts';
import { appendEvent } from '../../src/payments/outbox.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { box, delivery, insertSession, merchant } from '../helpers/delivery.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';
import { EMBEDDED_FORMS, INTERNAL_FORMS, LOOPBACK_FORMS, urlHost } from '../helpers/ssrfForms.ts';

// The SSRF guard at connection time: DNS is resolved again for every connection, so a name that
// was public at registration and points inside now is refused before any byte is sent. Names
// resolve through a fixed table handed to the guard in place of dns.lookup (the system resolver
// cannot be pointed at these addresses); IP literals go through the real socket path.
const db = useTestDatabase('ssrf_connect');
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());
const port = () => new URL(receiver.url).port;

const TABLE: Record<string, string[]> = {
  'local.test': ['127.0.0.1'],
  'mixed.test': ['127.0.0.1', '10.0.0.1'],
};
const named = (address: string) => `host-${address.replace(/[:.]/g, '-') || 'zero'}.test`;
for (const [, address] of [...EMBEDDED_FORMS, ...INTERNAL_FORMS]) TABLE[named(address)] = [address];

/** dns.lookup's shape, answering from TABLE. */
const tableLookup = ((
  hostname: string,
  _options: dns.LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => {
  const list = TABLE[hostname];
  if (!list) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  callback(
    null,
    list.map((address) => ({ address, family: net.isIP(address) })),
  );
}) as unknown as typeof dns.lookup;

async function send(allowPrivate: AllowPrivate, url: string) {
  const transport = createHttpTransport({ allowPrivate, lookup: tableLookup, timeoutMs: 2_000 });
  try {
    return await transport({ url, headers: { 'content-type': 'application/json' }, body: '{}' });
  } finally {
    await transport.close();
  }
}

describe.each([
  ['live (public only)', false, 'a private, loopback or link-local address'],
  ['sandbox (loopback only)', 'loopback', 'a private, link-local or reserved address (sandbox webhooks may reach loopback only)'],
] as const)('%s', (_mode, allowPrivate, refusal) => {
  test.each([...EMBEDDED_FORMS, ...INTERNAL_FORMS])('a name resolving to %s (%s) is refused when connecting, and at registration', async (_name, address) => {
    const host = named(address);
    const result = await send(allowPrivate, `http://${host}:${port()}/hook`);
    expect(result).toEqual({ ok: false, unsafe: true, error: `${host} resolves to ${refusal}` });
    await expect(checkWebhookUrl(`http://${host}/hook`, { allowPrivate, lookup: tableLookup })).rejects.toThrow(
      `webhook URL host ${host} resolves to ${refusal}`,
    );
  });

  test.each([...EMBEDDED_FORMS, ...INTERNAL_FORMS])('the IP literal %s (%s) is refused when connecting', async (_name, address) => {
    const result = await send(allowPrivate, `http://${urlHost(address)}:${port()}/hook`);
    expect(result).toEqual({ ok: false, unsafe: true, error: `${new URL(`http://${urlHost(address)}/`).hostname.replace(/^\[|\]$/g, '')} is ${refusal}` });
  });

  test('a name with one internal address among loopback ones is refused', async () => {
    expect(await send(allowPrivate, `http://mixed.test:${port()}/hook`)).toMatchObject({ ok: false, unsafe: true });
  });
});

test('sandbox: a name resolving to loopback and the loopback literals reach a local receiver', async () => {
  const before = receiver.received.length;
  expect(await send('loopback', `http://local.test:${port()}/by-name`)).toMatchObject({ ok: true, status: 200 });
  for (const [, address] of LOOPBACK_FORMS.filter(([, a]) => a !== '::1' && a !== '127.0.0.2')) {
    // The receiver listens on 127.0.0.1; ::1 and 127.0.0.2 are allowed but nothing listens there.
    expect(await send('loopback', `http://${urlHost(address)}:${port()}/literal`)).toMatchObject({ ok: true, status: 200 });
  }
  expect(receiver.received.length - before).toBe(3);
  // Live keeps refusing loopback.
  expect(await send(false, `http://local.test:${port()}/by-name`)).toMatchObject({ ok: false, unsafe: true });
});

test('the delivery worker with the default configuration: sandbox deliveries reach loopback, never internal ranges, and are not retried', async () => {
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  expect(config.webhookAllowPrivateSandbox).toBe('loopback');
  const { merchant: m } = await merchant(db.store);
  const urls = {
    local: `${receiver.url}/sandbox-local`,
    private: 'http://10.0.0.1:8080/hook',
    metadata: 'http://169.254.169.254/latest/meta-data',
    nat64: 'http://[64:ff9b::a00:1]:8080/hook',
    ula: 'http://[fd00:ec2::254]/latest',
  };
  const ids: Record<string, string> = {};
  for (const [name, url] of Object.entries(urls)) ids[(await createEndpoint(db.store, box, { merchantId: m.id, livemode: false, url })).endpoint.id] = name;
  const sessionId = await insertSession(db.store, { merchantId: m.id, webhookUrl: 'http://192.168.1.1/session-hook' });
  const before = receiver.received.length;
  const event = await db.store.transaction((sql) =>
    appendEvent(sql, { merchantId: m.id, livemode: false, type: 'payment.expired', sessionId, data: { id: sessionId } }),
  );
  await delivery(db.store, { config }).drain();

  expect(receiver.received.slice(before).map((r) => r.path)).toEqual(['/sandbox-local']);
  const { rows } = await db.store.query<{ endpoint_id: string | null; status: string; attempt_count: number; error: string | null }>(
    'SELECT d.endpoint_id, d.status, d.attempt_count, a.error FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.event_id = $1',
    [event.id],
  );
  const outcome = Object.fromEntries(
    rows.map((row) => [row.endpoint_id ? ids[row.endpoint_id] : 'session', { status: row.status, attempts: row.attempt_count, error: row.error }]),
  );
  const refused = (host: string) => ({
    status: 'failed',
    attempts: 1,
    error: `${host} is a private, link-local or reserved address (sandbox webhooks may reach loopback only)`,
  });
  expect(outcome).toEqual({
    local: { status: 'succeeded', attempts: 1, error: null },
    private: refused('10.0.0.1'),
    metadata: refused('169.254.169.254'),
    nat64: refused('64:ff9b::a00:1'),
    ula: refused('fd00:ec2::254'),
    session: refused('192.168.1.1'),
  });
});
