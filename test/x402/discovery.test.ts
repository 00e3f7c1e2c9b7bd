import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey } from 'viem/accounts';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { PaymentRequirementsV2Schema } from '@x402/core/schemas';
import { validateDiscoveryExtension, withBazaar, type DiscoveryExtension, type DiscoveryResourcesResponse } from '@x402/extensions/bazaar';
import { useTestDatabase } from '../helpers/db.ts';
import { box, createSocketClient, EVERY_CHAIN_LIVE, GENEROUS_LIMITS, newMerchant, WALLET } from '../helpers/api.ts';
import { addUserWithPassword, signedInClient } from '../helpers/dashboard.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { addWallet, listAudit } from '../../src/accounts/index.ts';

/**
 * x402 discovery (`GET /discovery/resources`, docs/agents.md "Discovery"): only opted-in, active,
 * live links on a chain where x402 runs here (base has a relayer key; polygon has none), in the
 * bazaar's shape, read with @x402/extensions' own client. Real Postgres; no chain is called.
 */
const db = useTestDatabase('x402_discovery');
const OTHER_WALLET = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
let app: ReturnType<typeof createHttp>;
let baseUrl: string;
let call: ReturnType<typeof createSocketClient>;
let shop: Awaited<ReturnType<typeof newMerchant>>;
let other: Awaited<ReturnType<typeof newMerchant>>;
const links: Record<string, string> = {};

beforeAll(async () => {
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const config = loadConfig({ ...EVERY_CHAIN_LIVE, SVC_PUBLIC_URL: 'http://127.0.0.1:1', LOG_LEVEL: 'silent', SVC_BASE_RELAYER_KEY: generatePrivateKey() });
  const x402 = createX402({ store: db.store, logger, metrics, config });
  app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = baseUrl;
  call = createSocketClient(baseUrl, await createOpenApiChecker(app));
  shop = await newMerchant(db.store, 'Agent Shop');
  other = await newMerchant(db.store, 'Other Shop');
  for (const chain of ['base', 'polygon'] as const) {
    await addWallet(db.store, { merchantId: shop.id, chain, address: WALLET, verifiedBy: 'operator', makeDefault: true });
    await addWallet(db.store, { merchantId: other.id, chain, address: OTHER_WALLET, verifiedBy: 'operator', makeDefault: true });
  }
  const create = async (name: string, key: string, body: Record<string, unknown>) => {
    const answer = await call('POST', '/api/v1/payment-links', { key, body: { currency: 'USDC', chain: 'base', amount: '5.00', ...body } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    links[name] = answer.body.id;
  };
  await create('listed', shop.live, {
    x402Discoverable: true,
    description: 'Weather report',
    metadata: { secret_ref: 'internal-42' },
    successUrl: 'https://hooks.example.com/thanks',
  });
  await create('notOpted', shop.live, {});
  await create('inactive', shop.live, { x402Discoverable: true });
  await create('testMode', shop.test, { x402Discoverable: true });
  await create('noRelayer', shop.live, { x402Discoverable: true, chain: 'polygon' });
  await create('otherMerchant', other.live, { amount: '1.25' });
  expect((await call('PATCH', `/api/v1/payment-links/${links.inactive}`, { key: shop.live, body: { active: false } })).status).toBe(200);
});

afterAll(async () => {
  await app?.close();
});

describe('GET /discovery/resources', () => {
  test('lists only opted-in active live links where x402 runs, newest first, in the bazaar shape', async () => {
    const before = await call('GET', '/discovery/resources');
    expect(before.status).toBe(200);
    expect(before.body.items.map((item: { resource: string }) => item.resource)).toEqual([`${baseUrl}/pay/${links.listed}/x402`]);

    // Another merchant opts a link in with PATCH: it is listed too, newest first.
    const patched = await call('PATCH', `/api/v1/payment-links/${links.otherMerchant}`, { key: other.live, body: { x402Discoverable: true } });
    expect(patched.status).toBe(200);
    expect(patched.body.x402Discoverable).toBe(true);
    const answer = await call('GET', '/discovery/resources');
    const body: DiscoveryResourcesResponse = answer.body;
    expect(body.x402Version).toBe(2);
    expect(body.pagination).toEqual({ limit: 20, offset: 0, total: 2 });
    expect(body.items.map((item) => item.resource)).toEqual([`${baseUrl}/pay/${links.otherMerchant}/x402`, `${baseUrl}/pay/${links.listed}/x402`]);
    const listed = body.items[1]!;
    expect(listed).toMatchObject({
      type: 'http',
      x402Version: 2,
      description: 'Weather report (5 USDC on base)',
      serviceName: 'Agent Shop',
      mimeType: 'application/json',
    });
    expect(listed.accepts).toEqual([
      expect.objectContaining({
        scheme: 'exact',
        network: 'eip155:8453',
        amount: '5000000',
        payTo: WALLET,
        extra: expect.objectContaining({ name: expect.any(String) }),
      }),
    ]);
    expect(body.items[0]!.accepts[0]).toMatchObject({ amount: '1250000', payTo: OTHER_WALLET });
    for (const item of body.items) {
      for (const requirement of item.accepts) expect(PaymentRequirementsV2Schema.safeParse(requirement).success).toBe(true);
      expect(validateDiscoveryExtension(item.extensions!.bazaar as DiscoveryExtension)).toEqual({ valid: true });
      expect(Date.parse(item.lastUpdated)).not.toBeNaN();
    }
    // Nothing private or unlisted leaks: metadata, redirect URL, other links, sessions.
    const text = JSON.stringify(body);
    for (const hidden of ['internal-42', 'hooks.example.com', links.notOpted, links.inactive, links.testMode, links.noRelayer, 'ses_'])
      expect(text).not.toContain(hidden);
  });

  test('pages with limit and offset, and filters as the bazaar client asks', async () => {
    const page = async (query: string) => (await call('GET', `/discovery/resources?${query}`)).body;
    const first = await page('limit=1');
    expect(first.items).toHaveLength(1);
    expect(first.pagination).toEqual({ limit: 1, offset: 0, total: 2 });
    const second = await page('limit=1&offset=1');
    expect(second.items[0].resource).toBe(`${baseUrl}/pay/${links.listed}/x402`);
    expect((await page('limit=1&offset=2')).pagination).toEqual({ limit: 1, offset: 2, total: 2 });
    expect((await page('limit=1&offset=2')).items).toEqual([]);
    expect((await page(`payTo=${WALLET.toLowerCase()}`)).items.map((item: { resource: string }) => item.resource)).toEqual([
      `${baseUrl}/pay/${links.listed}/x402`,
    ]);
    expect((await page('network=eip155:8453')).pagination.total).toBe(2);
    expect((await page('network=eip155:137')).pagination.total).toBe(0);
    expect((await page('type=mcp')).items).toEqual([]);
    expect((await page('scheme=exact&type=http&extensions=bazaar')).pagination.total).toBe(2);
    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'offset=10001', 'cursor=x'])
      expect((await call('GET', `/discovery/resources?${bad}`)).status).toBe(400);
  });

  test("@x402/extensions' withBazaar client lists the same resources through the facilitator URL", async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url: `${baseUrl}/api/v1/x402` }));
    const listed = await client.extensions.bazaar.listResources({ type: 'http', limit: 10 });
    expect(listed.items.map((item) => item.resource)).toEqual([`${baseUrl}/pay/${links.otherMerchant}/x402`, `${baseUrl}/pay/${links.listed}/x402`]);
  });
});

describe('x402Discoverable on payment links', () => {
  test('a change is audited with the key that made it; the same value again is not', async () => {
    const entries = await listAudit(db.store, other.id, { action: 'payment_link.x402_discoverable_changed' });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ target: links.otherMerchant, details: { x402Discoverable: true }, livemode: true });
    expect(entries[0]!.apiKeyId).toMatch(/^key_/);
    await call('PATCH', `/api/v1/payment-links/${links.otherMerchant}`, { key: other.live, body: { x402Discoverable: true } });
    expect(await listAudit(db.store, other.id, { action: 'payment_link.x402_discoverable_changed' })).toHaveLength(1);
    const created = await listAudit(db.store, shop.id, { action: 'payment_link.created' });
    expect(created.find((entry) => entry.target === links.listed)?.details).toMatchObject({ x402Discoverable: true });
  });

  test('a read-only key cannot set it (403), and an empty PATCH is a 400', async () => {
    const readOnly = await call('PATCH', `/api/v1/payment-links/${links.testMode}`, { key: shop.readOnly, body: { x402Discoverable: false } });
    expect(readOnly.status).toBe(403);
    const empty = await call('PATCH', `/api/v1/payment-links/${links.testMode}`, { key: shop.test, body: {} });
    expect(empty.status).toBe(400);
  });

  test('opting out removes the link from discovery', async () => {
    await call('PATCH', `/api/v1/payment-links/${links.otherMerchant}`, { key: other.live, body: { x402Discoverable: false } });
    expect((await call('GET', '/discovery/resources')).body.pagination.total).toBe(1);
  });

  test('a developer lists a link from the dashboard (audited); a viewer cannot', async () => {
    const developer = await addUserWithPassword(db.store, { merchantId: shop.id, role: 'developer' });
    const viewer = await addUserWithPassword(db.store, { merchantId: shop.id, role: 'viewer' });
    const dev = await signedInClient(app, developer.email);
    const page = await dev.get('/dashboard/links');
    const livemode = !page.body.includes(links.testMode!);
    const target = livemode ? links.notOpted! : links.testMode!;
    expect((await call('PATCH', `/api/v1/payment-links/${links.testMode}`, { key: shop.test, body: { x402Discoverable: false } })).status).toBe(200);
    expect(page.body).toContain('List in x402 discovery');
    expect((await dev.post(`/dashboard/links/${target}/discoverable`)).status).toBe(303);
    const { rows } = await db.store.query<{ x402_discoverable: boolean }>('SELECT x402_discoverable FROM payment_links WHERE id = $1', [target]);
    expect(rows[0]!.x402_discoverable).toBe(true);
    const entries = await listAudit(db.store, shop.id, { action: 'payment_link.x402_discoverable_changed', userId: developer.id });
    expect(entries.map((entry) => entry.target)).toEqual([target]);
    const view = await signedInClient(app, viewer.email);
    expect((await view.post(`/dashboard/links/${target}/undiscoverable`)).status).toBe(403);
  });
});
