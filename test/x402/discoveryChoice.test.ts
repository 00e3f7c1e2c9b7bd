import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey } from 'viem/accounts';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import { useTestDatabase } from '../helpers/db.ts';
import { box, createSocketClient, EVERY_CHAIN_LIVE, GENEROUS_LIMITS, newMerchant, WALLET } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { MAX_OPEN_SESSIONS_PER_LINK } from '../../src/payments/links.ts';

/**
 * Payment links with several options under x402 (docs/agents.md, "Waiting sessions"): discovery
 * lists one `accepts` entry per option x402 takes here (base and arbitrum have relayer keys,
 * polygon none), and the link's x402 URL opens a session waiting for the choice whose 402 lists
 * the same options. Real Postgres; no chain is called (nothing is paid here: choice.anvil.test.ts pays).
 */
const db = useTestDatabase('x402_discovery_choice');
const ARBITRUM_WALLET = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const BASE_USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const ARBITRUM_USDC = '0xaf88d065e77c8cC2239327C5EDb3A432268e5831';
const OPTIONS = [
  { chain: 'base', currency: 'USDC' },
  { chain: 'polygon', currency: 'USDC' },
  { chain: 'arbitrum', currency: 'USDC' },
];
let app: ReturnType<typeof createHttp>;
let baseUrl: string;
let call: ReturnType<typeof createSocketClient>;
let shop: Awaited<ReturnType<typeof newMerchant>>;
let linkId: string;

beforeAll(async () => {
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const config = loadConfig({
    ...EVERY_CHAIN_LIVE,
    SVC_PUBLIC_URL: 'http://127.0.0.1:1',
    LOG_LEVEL: 'silent',
    SVC_BASE_RELAYER_KEY: generatePrivateKey(),
    SVC_ARBITRUM_RELAYER_KEY: generatePrivateKey(),
  });
  const x402 = createX402({ store: db.store, logger, metrics, config });
  app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = baseUrl;
  call = createSocketClient(baseUrl, await createOpenApiChecker(app));
  shop = await newMerchant(db.store, 'Choice Shop');
  for (const chain of ['base', 'polygon'] as const)
    await addWallet(db.store, { merchantId: shop.id, chain, address: WALLET, verifiedBy: 'operator', makeDefault: true });
  await addWallet(db.store, { merchantId: shop.id, chain: 'arbitrum', address: ARBITRUM_WALLET, verifiedBy: 'operator', makeDefault: true });
  const created = await call('POST', '/api/v1/payment-links', {
    key: shop.live,
    body: { amount: '2.50', paymentOptions: OPTIONS, x402Discoverable: true, description: 'Report' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  linkId = created.body.id;
});

afterAll(async () => {
  await app?.close();
});

describe('x402 for payment links with several options', () => {
  test('discovery lists the link once, with one accepts entry per option x402 takes here, each to its chain wallet', async () => {
    const listed = await call('GET', '/discovery/resources');
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(1);
    const item = listed.body.items[0];
    expect(item.resource).toBe(`${baseUrl}/pay/${linkId}/x402`);
    expect(item.description).toBe('Report (2.5 in one of USDC on base, USDC on polygon, USDC on arbitrum)');
    expect(item.accepts).toEqual([
      expect.objectContaining({ network: 'eip155:8453', asset: BASE_USDC, amount: '2500000', payTo: WALLET }),
      expect.objectContaining({ network: 'eip155:42161', asset: ARBITRUM_USDC, amount: '2500000', payTo: ARBITRUM_WALLET }),
    ]);
    // The bazaar client's filters match any of the options.
    const bazaar = withBazaar(new HTTPFacilitatorClient({ url: `${baseUrl}/api/v1/x402` })).extensions.bazaar;
    expect((await bazaar.listResources({ network: 'eip155:42161' })).items).toHaveLength(1);
    expect((await bazaar.listResources({ payTo: ARBITRUM_WALLET.toLowerCase() })).items).toHaveLength(1);
    expect((await bazaar.listResources({ network: 'eip155:137' })).items).toHaveLength(0);
  });

  test("the link's x402 URL opens a session waiting for the choice; its 402 lists the same options and its view carries the x402Url", async () => {
    const answer = await fetch(`${baseUrl}/pay/${linkId}/x402`);
    expect(answer.status).toBe(402);
    const required = JSON.parse(Buffer.from(answer.headers.get('payment-required')!, 'base64').toString());
    const sessionId = /\/checkout\/(ses_\w+)\/x402$/.exec(required.resource.url)![1]!;
    expect(required.accepts.map((accept: { network: string; payTo: string; amount: string }) => [accept.network, accept.payTo, accept.amount])).toEqual([
      ['eip155:8453', WALLET, '2500000'],
      ['eip155:42161', ARBITRUM_WALLET, '2500000'],
    ]);
    // Nothing reserved: no payments_sessions row until a payment (or the customer) chooses.
    expect((await db.store.query('SELECT 1 FROM payment_sessions WHERE id = $1', [sessionId])).rowCount).toBe(0);
    const view = await call('GET', `/api/v1/sessions/${sessionId}`, { key: shop.live });
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ chain: null, choice: null, paymentLinkId: linkId, x402Url: `${baseUrl}/checkout/${sessionId}/x402` });
    // The chooser's JSON flags which options the 402 lists.
    const chooser = await fetch(`${baseUrl}/checkout/${sessionId}`, { headers: { accept: 'application/json' } });
    expect(((await chooser.json()) as { options: { x402: boolean }[] }).options.map((option) => option.x402)).toEqual([true, false, true]);
    // Chosen through the page: it belongs to the link and answers its single-pair 402.
    const chose = await fetch(`${baseUrl}/checkout/${sessionId}/choice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ chain: 'arbitrum', currency: 'USDC' }),
    });
    expect(chose.status).toBeLessThan(400);
    expect((await call('GET', `/api/v1/sessions/${sessionId}`, { key: shop.live })).body).toMatchObject({ chain: 'arbitrum', paymentLinkId: linkId });
    const single = await fetch(`${baseUrl}/checkout/${sessionId}/x402`);
    const accepts = JSON.parse(Buffer.from(single.headers.get('payment-required')!, 'base64').toString()).accepts;
    expect(accepts).toEqual([expect.objectContaining({ network: 'eip155:42161', payTo: ARBITRUM_WALLET })]);
  });

  test('a live fiat-priced waiting session whose feeds cannot be read here: its x402 answers 503 naming why, and nothing is chosen', async () => {
    const created = await call('POST', '/api/v1/sessions', {
      key: shop.live,
      body: { price: { amount: '10.00', currency: 'EUR' }, paymentOptions: [OPTIONS[0], OPTIONS[2]] },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // Its options are x402's kind, so it advertises the URL; the price is converted when it is fetched.
    expect(created.body.x402Url).toBe(`${baseUrl}/checkout/${id}/x402`);
    const answer = await fetch(`${baseUrl}/checkout/${id}/x402`);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: string }).error).toContain("x402 can pay none of this session's options here");
    const view = await call('GET', `/api/v1/sessions/${id}`, { key: shop.live });
    expect(view.body).toMatchObject({ choice: null, chain: null, price: { amount: '10.00', currency: 'EUR' }, priceQuote: null });
  });

  test('a waiting session none of whose options x402 takes here has no x402Url, and its URL answers 503 naming why', async () => {
    const created = await call('POST', '/api/v1/sessions', {
      key: shop.live,
      body: {
        amount: '1',
        paymentOptions: [
          { chain: 'polygon', currency: 'USDC' },
          { chain: 'polygon', currency: 'USDT' },
        ],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.x402Url).toBeNull();
    const answer = await fetch(`${baseUrl}/checkout/${created.body.id}/x402`);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: string }).error).toContain('SVC_POLYGON_RELAYER_KEY');
  });
  test("the link's waiting sessions count towards its cap of open checkouts: at the cap, its x402 URL is a 429 and opens nothing", async () => {
    const { rows } = await db.store.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_choices WHERE terms ->> 'paymentLinkId' = $1 AND chosen_at IS NULL AND expires_at > now()`,
      [linkId],
    );
    const open = rows[0]!.n + Number((await db.store.query(`SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1`, [linkId])).rows[0]!.n);
    await db.store.query(
      `INSERT INTO session_choices (id, merchant_id, livemode, payment_options, terms, expires_at)
       SELECT 'ses_Cap' || lpad(i::text, 17, '0'), $1, true, $2::jsonb, jsonb_build_object('amount', '2.5', 'expiresIn', 3600, 'paymentLinkId', $3::text),
              now() + interval '1 hour'
         FROM generate_series(1, $4::int - $5::int) i`,
      [shop.id, JSON.stringify(OPTIONS), linkId, MAX_OPEN_SESSIONS_PER_LINK, open],
    );
    const before = Number((await db.store.query('SELECT count(*)::int AS n FROM session_choices')).rows[0]!.n);
    const answer = await fetch(`${baseUrl}/pay/${linkId}/x402`);
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(Number((await db.store.query('SELECT count(*)::int AS n FROM session_choices')).rows[0]!.n)).toBe(before);
  });
});
