import { beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';
import { canonical, EMBEDDED_FORMS, INTERNAL_FORMS, LOOPBACK_FORMS, urlHost } from '../helpers/ssrfForms.ts';

// The SSRF guard at registration, through the API with the default SVC_WEBHOOK_ALLOW_PRIVATE
// (sandbox): live webhooks reach public addresses only, sandbox (test-key) ones loopback too.
const db = useTestDatabase('ssrf_registration');
const api = useApi(db);
let m: Awaited<ReturnType<typeof newMerchant>>;
beforeAll(async () => {
  m = await newMerchant(db.store);
});

const session = { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET };

/** The three ways a webhook URL is registered: an endpoint, a session's and a payment link's webhookUrl. */
const ROUTES = [
  { name: 'POST /webhooks', url: '/api/v1/webhooks', field: 'url', body: (hook: string) => ({ url: hook }) },
  { name: 'POST /sessions', url: '/api/v1/sessions', field: 'webhookUrl', body: (hook: string) => ({ ...session, webhookUrl: hook }) },
  { name: 'POST /payment-links', url: '/api/v1/payment-links', field: 'webhookUrl', body: (hook: string) => ({ ...session, webhookUrl: hook }) },
];

async function rows(): Promise<string> {
  const {
    rows: [row],
  } = await db.store.query<{ n: string }>(
    "SELECT (SELECT count(*) FROM webhook_endpoints) || '/' || (SELECT count(*) FROM payment_sessions) || '/' || (SELECT count(*) FROM payment_links) AS n",
  );
  return row!.n;
}

async function register(route: (typeof ROUTES)[number], livemode: boolean, address: string) {
  const before = await rows();
  const answer = await api.call('POST', route.url, { key: livemode ? m.live : m.test, body: route.body(`http://${urlHost(address)}:8080/hook`) });
  return { ...answer, wrote: (await rows()) !== before };
}

const LIVE_REFUSAL = 'resolves to a private, loopback or link-local address';
const SANDBOX_REFUSAL = 'resolves to a private, link-local or reserved address (sandbox webhooks may reach loopback only)';

describe.each(ROUTES)('$name', (route) => {
  test.each(EMBEDDED_FORMS)('%s (%s) is refused for live and sandbox keys, writing nothing', async (_name, address) => {
    for (const [livemode, refusal] of [
      [true, LIVE_REFUSAL],
      [false, SANDBOX_REFUSAL],
    ] as const) {
      const answer = await register(route, livemode, address);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body).toEqual({ error: `${route.field}: webhook URL host ${canonical(address)} ${refusal}` });
      expect(answer.wrote).toBe(false);
    }
  });

  test.each(INTERNAL_FORMS)('sandbox: %s (%s) is refused too, not only for live keys', async (_name, address) => {
    const answer = await register(route, false, address);
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body).toEqual({ error: `${route.field}: webhook URL host ${canonical(address)} ${SANDBOX_REFUSAL}` });
    expect(answer.wrote).toBe(false);
  });

  test.each(LOOPBACK_FORMS)('sandbox: loopback %s is allowed (a local receiver), live: refused', async (_name, address) => {
    expect((await register(route, false, address)).status).toBe(201);
    expect((await register(route, true, address)).status).toBe(400);
  });

  test('a name that resolves to loopback (localhost) is allowed in the sandbox', async () => {
    expect((await register(route, false, 'localhost')).status).toBe(201);
  });

  test.each([
    ['IPv4-mapped public', '::ffff:8.8.8.8'],
    ['NAT64 of a public address (DNS64 on an IPv6-only network)', '64:ff9b::8.8.8.8'],
    ['global unicast', '2606:4700:4700::1111'],
  ])('%s (%s) is allowed for live keys', async (_name, address) => {
    expect((await register(route, true, address)).status).toBe(201);
  });
});
