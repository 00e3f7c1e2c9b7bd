import { beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';

// Text that is not well-formed Unicode (a lone UTF-16 surrogate, which JSON can spell as "\ud800")
// is refused where the body is parsed, before any route sees it: Postgres cannot store it, and
// before this rule metadata holding one gave 500s on sessions, payment links and refunds.
const db = useTestDatabase('unicode_input');
const api = useApi(db, { checked: false });

const TABLES = [
  'merchants',
  'api_keys',
  'wallets',
  'wallet_challenges',
  'payment_sessions',
  'payment_links',
  'refunds',
  'events',
  'idempotency_keys',
  'webhook_endpoints',
  'webhook_deliveries',
  'transfers',
];

/** Row counts of every table a request could write, to show a refused one wrote nothing. */
async function snapshot(): Promise<Record<string, string>> {
  const counts: Record<string, string> = {};
  for (const table of TABLES) {
    const { rows } = await db.store.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`);
    counts[table] = rows[0]!.n;
  }
  return counts;
}

let key: string;
/** Receiving wallets are managed with a live key only (a test key gets 403 before the body is read). */
let liveKey: string;
const ids = { payment: '', link: '', webhook: '', refund: '' };

beforeAll(async () => {
  const merchant = await newMerchant(db.store);
  key = merchant.test;
  liveKey = merchant.live;
  const post = async (url: string, body: object) => {
    const answer = await api.app.inject({ method: 'POST', url, headers: { 'x-api-key': key }, payload: body });
    expect(answer.statusCode, answer.body).toBe(201);
    return answer.json().id as string;
  };
  ids.payment = await post('/api/v1/payments', { amount: '10', currency: 'USDC', chain: 'base', merchantWallet: WALLET });
  await db.store.query(`UPDATE payment_sessions SET status = 'confirmed', amount_received = amount_due, amount_confirmed = amount_due WHERE id = $1`, [
    ids.payment,
  ]);
  ids.link = await post('/api/v1/payment-links', { amount: '5', currency: 'USDT', chain: 'polygon', merchantWallet: WALLET });
  ids.webhook = await post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/in' });
  ids.refund = await post('/api/v1/refunds', { paymentId: ids.payment, amount: '1', address: WALLET });
});

const session = { amount: '12.50', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET };

/** Every route that takes a JSON body; `field` is one of its string fields ("a.b" for metadata). */
const ROUTES: {
  route: string;
  method: 'POST' | 'PATCH';
  url: () => string;
  auth: boolean;
  body: () => Record<string, unknown>;
  field: string;
  metadata: boolean;
}[] = [
  { route: 'POST /sessions', method: 'POST', url: () => '/api/v1/sessions', auth: true, body: () => session, field: 'metadata.order', metadata: true },
  { route: 'POST /payments', method: 'POST', url: () => '/v1/payments', auth: true, body: () => session, field: 'metadata.order', metadata: true },
  {
    route: 'POST /checkout/sessions',
    method: 'POST',
    url: () => '/api/v1/checkout/sessions',
    auth: true,
    body: () => session,
    field: 'metadata.order',
    metadata: true,
  },
  {
    route: 'POST /payment-links',
    method: 'POST',
    url: () => '/api/v1/payment-links',
    auth: true,
    body: () => session,
    field: 'metadata.order',
    metadata: true,
  },
  {
    route: 'PATCH /payment-links/{id}',
    method: 'PATCH',
    url: () => `/api/v1/payment-links/${ids.link}`,
    auth: true,
    body: () => ({ active: false }),
    field: 'note',
    metadata: false,
  },
  {
    route: 'POST /refunds',
    method: 'POST',
    url: () => '/api/v1/refunds',
    auth: true,
    body: () => ({ paymentId: ids.payment, amount: '1', address: WALLET }),
    field: 'metadata.ticket',
    metadata: true,
  },
  {
    route: 'POST /refunds/{id}/complete',
    method: 'POST',
    url: () => `/api/v1/refunds/${ids.refund}/complete`,
    auth: true,
    body: () => ({ txHash: `0x${'ab'.repeat(32)}` }),
    field: 'txHash',
    metadata: false,
  },
  {
    route: 'POST /refunds/{id}/reject',
    method: 'POST',
    url: () => `/api/v1/refunds/${ids.refund}/reject`,
    auth: true,
    body: () => ({ reason: 'no' }),
    field: 'reason',
    metadata: false,
  },
  {
    route: 'POST /webhooks',
    method: 'POST',
    url: () => '/api/v1/webhooks',
    auth: true,
    body: () => ({ url: 'http://127.0.0.1:9/other' }),
    field: 'description',
    metadata: false,
  },
  {
    route: 'PATCH /webhooks/{id}',
    method: 'PATCH',
    url: () => `/api/v1/webhooks/${ids.webhook}`,
    auth: true,
    body: () => ({ description: 'orders' }),
    field: 'description',
    metadata: false,
  },
  {
    route: 'POST /wallets/challenges',
    method: 'POST',
    url: () => '/api/v1/wallets/challenges',
    auth: true,
    body: () => ({ chain: 'base', address: WALLET }),
    field: 'address',
    metadata: false,
  },
  {
    route: 'POST /wallets',
    method: 'POST',
    url: () => '/api/v1/wallets',
    auth: true,
    body: () => ({ challengeId: 'wch_x', signature: '0x00' }),
    field: 'signature',
    metadata: false,
  },
  {
    route: 'POST /transfers/{id}/attribution',
    method: 'POST',
    url: () => '/api/v1/transfers/tr_x/attribution',
    auth: true,
    body: () => ({ sessionId: ids.payment }),
    field: 'sessionId',
    metadata: false,
  },
  {
    route: 'POST /events/{id}/redeliver',
    method: 'POST',
    url: () => '/api/v1/events/evt_x/redeliver',
    auth: true,
    body: () => ({ endpointId: ids.webhook }),
    field: 'endpointId',
    metadata: false,
  },
  {
    route: 'POST /sandbox/sessions/{id}/pay',
    method: 'POST',
    url: () => `/api/v1/sandbox/sessions/${ids.payment}/pay`,
    auth: true,
    body: () => ({ outcome: 'exact' }),
    field: 'outcome',
    metadata: false,
  },
  {
    route: 'POST /checkout/{id}/refund',
    method: 'POST',
    url: () => `/checkout/${ids.payment}/refund`,
    auth: false,
    body: () => ({ destination: WALLET }),
    field: 'reason',
    metadata: false,
  },
  {
    route: 'POST /checkout/{id}/sandbox-pay',
    method: 'POST',
    url: () => `/checkout/${ids.payment}/sandbox-pay`,
    auth: false,
    body: () => ({ outcome: 'exact' }),
    field: 'outcome',
    metadata: false,
  },
];

function withField(body: Record<string, unknown>, field: string, value: string): Record<string, unknown> {
  const [head, inner] = field.split('.') as [string, string | undefined];
  return inner ? { ...body, [head]: { [inner]: value } } : { ...body, [head]: value };
}

/** Where the lone surrogate goes, and the error that must name that place. */
const VARIANTS = {
  value: (route: (typeof ROUTES)[number]) => ({
    body: withField(route.body(), route.field, 'order \ud800 1'),
    error: `body.${route.field} contains a lone UTF-16 surrogate`,
  }),
  key: (route: (typeof ROUTES)[number]) =>
    route.metadata
      ? { body: { ...route.body(), metadata: { '\udc00': 'x' } }, error: 'body.metadata has a key that contains a lone UTF-16 surrogate' }
      : { body: { ...route.body(), 'k\udbff': 'x' }, error: 'body has a key that contains a lone UTF-16 surrogate' },
  nested: (route: (typeof ROUTES)[number]) => ({
    body: { ...route.body(), deep: { list: [1, { text: ['ok', '\udfff'] }] } },
    error: 'body.deep.list[1].text[1] contains a lone UTF-16 surrogate',
  }),
};

describe.each(ROUTES)('$route', (route) => {
  test.each(Object.keys(VARIANTS) as (keyof typeof VARIANTS)[])(
    'a lone surrogate as a %s is a 400 naming where it is, and nothing is written',
    async (variant) => {
      const { body, error } = VARIANTS[variant](route);
      const payload = JSON.stringify(body);
      // JSON.stringify writes a lone surrogate as an escape: the wire text itself is plain ASCII.
      expect(payload).toMatch(/\\ud[89a-f][0-9a-f]{2}/);
      const before = await snapshot();
      const answer = await api.app.inject({
        method: route.method,
        url: route.url(),
        payload,
        headers: {
          'content-type': 'application/json',
          'idempotency-key': `unicode-${route.route}-${variant}`,
          ...(route.auth ? { 'x-api-key': route.url().includes('/wallets') ? liveKey : key } : {}),
        },
      });
      expect(answer.statusCode, answer.body).toBe(400);
      expect(answer.json()).toEqual({ error: `${error} (an unpaired \\ud800-\\udfff), which is not well-formed Unicode` });
      expect(await snapshot()).toEqual(before);
    },
  );
});

test('a surrogate pair (an emoji written as two escapes) is well-formed and accepted', async () => {
  const payload = JSON.stringify({ ...session, metadata: { note: 'thanks \ud83d\ude00' } }).replace('😀', '\\ud83d\\ude00');
  expect(payload).toContain('\\ud83d\\ude00');
  const answer = await api.app.inject({ method: 'POST', url: '/api/v1/sessions', payload, headers: { 'content-type': 'application/json', 'x-api-key': key } });
  expect(answer.statusCode, answer.body).toBe(201);
  expect(answer.json().metadata).toEqual({ note: 'thanks 😀' });
});

test('a path or query cannot carry a lone surrogate: a percent-encoded one in the path is a 400, in the query it stays undecoded text', async () => {
  const path = await api.app.inject({ method: 'GET', url: '/api/v1/sessions/ses_%ED%A0%80', headers: { 'x-api-key': key } });
  expect(path.statusCode).toBe(400);
  expect(path.json()).toEqual({ error: expect.stringContaining('is not a valid url component') });
  const query = await api.app.inject({ method: 'GET', url: '/api/v1/payments?starting_after=%ED%A0%80', headers: { 'x-api-key': key } });
  expect(query.statusCode, query.body).toBeLessThan(500);
  // Invalid UTF-8 bytes in a body are replaced (U+FFFD) when the body is read as text: well-formed.
  const [before, after] = JSON.stringify({ ...session, metadata: { note: 'MARK' } }).split('MARK') as [string, string];
  const bytes = Buffer.concat([Buffer.from(before), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(after)]);
  const raw = await api.app.inject({
    method: 'POST',
    url: '/api/v1/sessions',
    payload: bytes,
    headers: { 'content-type': 'application/json', 'x-api-key': key },
  });
  expect(raw.statusCode, raw.body).toBe(201);
  expect(raw.json().metadata.note).toBe('\ufffd\ufffd\ufffd');
});

test('a lone surrogate under thousands of nesting levels is still a 400 that names a shortened place, not a stack overflow', async () => {
  const depth = 20_000;
  const payload = `${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}`;
  const answer = await api.app.inject({ method: 'POST', url: '/api/v1/payments', payload, headers: { 'content-type': 'application/json', 'x-api-key': key } });
  expect(answer.statusCode, answer.body).toBe(400);
  const { error } = answer.json() as { error: string };
  expect(error).toMatch(/^body\[0\]\[0\]\S*…\S*\[0\] contains a lone UTF-16 surrogate/);
  expect(error.length).toBeLessThan(400);
});
