import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { box, buildApi, GENEROUS_LIMITS, newMerchant, PUBLIC_URL, SOLANA_WALLET, WALLET } from '../helpers/api.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createOpenApiChecker, type OpenApiChecker } from '../helpers/openapiCheck.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { makeSession, setSessionState } from '../helpers/checkoutSessions.ts';
import { prefersJson } from '../../src/checkout/index.ts';
import { sandboxSolanaMint, sandboxToken } from '../../src/checkout/uris.ts';
import { fakeAddress, sandboxWallet } from '../../src/internal/sandboxIds.ts';

const db = useTestDatabase('checkout_json');
let app: FastifyInstance;
let checker: OpenApiChecker;
let merchant: Awaited<ReturnType<typeof newMerchant>>;
const chains = loadChains();
// These sessions are sandbox ones: their instructions name fake tokens (sandboxToken), never the
// real contract or mint, so nothing built from them can move real money (sandboxUris.test.ts).
const POLYGON_USDC = sandboxToken(chains.polygon, chains.polygon.tokens.find((t) => t.symbol === 'USDC')!.address);
const SOLANA_USDC_REAL = chains.solana.tokens.find((t) => t.symbol === 'USDC')!.address;
const SOLANA_USDC = sandboxSolanaMint(SOLANA_USDC_REAL);
const BSC_USDT = sandboxToken(chains.bsc, chains.bsc.tokens.find((t) => t.symbol === 'USDT')!.address);

beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
  checker = await createOpenApiChecker(app);
  merchant = await newMerchant(db.store, 'Corner <Shop> & Co');
});
afterAll(async () => {
  await app?.close();
});

/**
 * Where this file's sandbox sessions pay: the merchant's sandbox address, whatever merchantWallet
 * says (sandbox instructions never name a real wallet, and name the chain's test network).
 */
const sandboxPayTo = (chain: 'polygon' | 'bsc' | 'solana') => sandboxWallet(chain, merchant.id);

/** GET with an Accept header; JSON answers are checked against the OpenAPI document. */
async function get(url: string, accept = 'application/json') {
  const response = await app.inject({ method: 'GET', url, headers: { accept } });
  const json = String(response.headers['content-type']).startsWith('application/json');
  const body = json ? response.json() : response.body;
  if (json) checker.check('GET', url, response.statusCode, body);
  return { status: response.statusCode, headers: response.headers, body };
}

async function post(url: string, payload: unknown) {
  const response = await app.inject({ method: 'POST', url, payload: payload as object, headers: { accept: 'application/json' } });
  const body = response.json();
  checker.check('POST', url, response.statusCode, body);
  return { status: response.statusCode, body };
}

describe('payment instructions (Accept: application/json)', () => {
  test('EVM session: token, recipient, exact due amount, EIP-681 URI, status URLs; valid per the OpenAPI document', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '12.5' });
    const { status, headers, body } = await get(`/checkout/${session.id}`);
    expect(status).toBe(200);
    expect(headers['cache-control']).toBe('no-store');
    expect(headers.vary).toContain('Accept');
    expect(body).toMatchObject({
      object: 'payment_instructions',
      id: session.id,
      status: 'created',
      view: 'awaiting',
      livemode: false,
      merchant: { name: 'Corner <Shop> & Co' },
      chain: 'polygon',
      chainKind: 'evm',
      chainId: 80002,
      currency: 'USDC',
      decimals: 6,
      token: { symbol: 'USDC', address: POLYGON_USDC, decimals: 6, standard: 'erc20' },
      recipient: sandboxPayTo('polygon'),
      reference: null,
      amount: '12.5',
      amountBaseUnits: '12500000',
      amountDue: '12.5',
      amountDueBaseUnits: '12500000',
      amountReceived: '0',
      amountRemainingBaseUnits: '12500000',
      payable: true,
      confirmations: 0,
      requiredConfirmations: 32,
      paymentUri: `ethereum:${POLYGON_USDC}@80002/transfer?address=${sandboxPayTo('polygon')}&uint256=12500000`,
      checkoutUrl: `${PUBLIC_URL}/checkout/${session.id}`,
      statusUrl: `${PUBLIC_URL}/checkout/${session.id}/status`,
      eventsUrl: `${PUBLIC_URL}/checkout/${session.id}/events`,
      refundUrl: null,
    });
    expect(body.expiresAt).toBe(session.expiresAt.toISOString());
    expect(body.secondsToExpiry).toBeGreaterThan(3590);
    expect(body.secondsToExpiry).toBeLessThanOrEqual(3600);
    expect(checker.seen.has('GET /checkout/{sessionId} 200')).toBe(true);
  });

  test('a second session for the same amount gets a unique due amount, and its URI asks for exactly that', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '12.5' });
    const { body } = await get(`/checkout/${session.id}`);
    expect(body.amount).toBe('12.5');
    expect(body.amountDue).toBe('12.500001');
    expect(body.amountDueBaseUnits).toBe('12500001');
    expect(body.paymentUri).toBe(`ethereum:${POLYGON_USDC}@80002/transfer?address=${sandboxPayTo('polygon')}&uint256=12500001`);
  });

  test('bsc amounts use 18 decimals in base units and in the URI', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'bsc', currency: 'USDT', merchantWallet: WALLET, amount: '3.25' });
    const { body } = await get(`/checkout/${session.id}`);
    expect(body).toMatchObject({ chainId: 97, decimals: 18, amountDueBaseUnits: '3250000000000000000', token: { address: BSC_USDT, decimals: 18 } });
    expect(body.paymentUri).toBe(`ethereum:${BSC_USDT}@97/transfer?address=${sandboxPayTo('bsc')}&uint256=3250000000000000000`);
  });

  test('solana session: mint, reference, Solana Pay URI with decimal amount and encoded label', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'solana', merchantWallet: SOLANA_WALLET, amount: '7.05' });
    const { body } = await get(`/checkout/${session.id}`);
    expect(body).toMatchObject({
      chainKind: 'solana',
      chainId: 'devnet',
      recipient: sandboxPayTo('solana'),
      reference: session.reference,
      token: { address: SOLANA_USDC, standard: 'spl' },
    });
    expect(body.token.tokenProgram).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
    expect(body.paymentUri).toBe(
      `solana:${sandboxPayTo('solana')}?amount=7.05&spl-token=${SOLANA_USDC}&reference=${session.reference}&label=Corner%20%3CShop%3E%20%26%20Co&message=Payment%20${session.id}`,
    );
  });

  test('underpaid: remaining amount and a URI for the rest; the status endpoint agrees', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '20' });
    await setSessionState(db.store, session.id, { status: 'pending', amountReceived: 15_000_000n, confirmations: 40, txHash: `0x${'ab'.repeat(32)}` });
    const { body } = await get(`/checkout/${session.id}`);
    expect(body).toMatchObject({ view: 'underpaid', amountReceived: '15', amountRemaining: '5', amountRemainingBaseUnits: '5000000', payable: true });
    expect(body.paymentUri).toBe(`ethereum:${POLYGON_USDC}@80002/transfer?address=${sandboxPayTo('polygon')}&uint256=5000000`);
    const status = await get(`/checkout/${session.id}/status`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ object: 'payment_status', view: 'underpaid', amountRemaining: '5', txHash: `0x${'ab'.repeat(32)}` });
  });

  test('an unpaid session past expiry shows as expired with nothing to pay, before the engine sweeps it', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'base', merchantWallet: WALLET, amount: '1' });
    await setSessionState(db.store, session.id, { expiresInSeconds: -5 });
    const { body } = await get(`/checkout/${session.id}`);
    expect(body).toMatchObject({ status: 'created', view: 'expired', payable: false, paymentUri: null, secondsToExpiry: 0 });
    expect(body.token.paymentUri).toBeNull();
    const qr = await app.inject({ method: 'GET', url: `/checkout/${session.id}/qr.svg` });
    expect(qr.statusCode).toBe(404);
  });

  test('unknown, malformed and other-prefix ids are 404 {"error"} as JSON and a 404 page as HTML', async () => {
    for (const id of ['ses_AAAAAAAAAAAAAAAAAAAA', 'nope', 'mer_AAAAAAAAAAAAAAAAAAAA', "ses_'%20OR%201=1"]) {
      const json = await get(`/checkout/${id}`);
      expect(json.status).toBe(404);
      expect(json.body).toEqual({ error: expect.stringContaining('no checkout session') });
      const html = await get(`/checkout/${id}`, 'text/html');
      expect(html.status).toBe(404);
      expect(String(html.headers['content-type'])).toContain('text/html');
      expect(html.body).toContain('Payment not found');
      expect((await get(`/checkout/${id}/status`)).status).toBe(404);
    }
  });

  test('a successUrl that is not http(s) is never handed to the page', async () => {
    const session = await makeSession(db.store, {
      merchantId: merchant.id,
      chain: 'polygon',
      merchantWallet: WALLET,
      amount: '2',
      successUrl: 'https://shop.example/thanks?order=1',
    });
    expect((await get(`/checkout/${session.id}`)).body.successUrl).toBe('https://shop.example/thanks?order=1');
    await db.store.query(`UPDATE payment_sessions SET success_url = 'javascript:alert(1)' WHERE id = $1`, [session.id]);
    expect((await get(`/checkout/${session.id}`)).body.successUrl).toBeNull();
  });
});

describe('content negotiation and headers', () => {
  test('prefersJson: explicit JSON wins, browsers and */* get the page', () => {
    expect(prefersJson('application/json')).toBe(true);
    expect(prefersJson('application/json, text/plain, */*')).toBe(true);
    expect(prefersJson('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toBe(false);
    expect(prefersJson('text/html;q=0.5, application/json')).toBe(true);
    expect(prefersJson('application/json;q=0')).toBe(false);
    expect(prefersJson('*/*')).toBe(false);
    expect(prefersJson(undefined)).toBe(false);
  });

  test('the page carries a strict CSP, no framing, no referrer, and escapes merchant text', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '4' });
    const { status, headers, body } = await get(`/checkout/${session.id}`, 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(status).toBe(200);
    expect(String(headers['content-type'])).toBe('text/html; charset=utf-8');
    const csp = String(headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toContain('unsafe-inline');
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(body).toContain('Corner &lt;Shop&gt; &amp; Co');
    expect(body).not.toContain('Corner <Shop>');
    expect(body).not.toMatch(/<(script|link|img)[^>]+(src|href)="https?:/);
    expect(body).toContain('id="sandbox-tools"');
    const live = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '4', livemode: true });
    const livePage = await get(`/checkout/${live.id}`, 'text/html');
    expect(livePage.body).not.toContain('id="sandbox-tools"');
    expect(livePage.body).not.toContain('Test mode');
  });

  test('SVC_CHECKOUT_FRAME_ANCESTORS lets the listed origins (only) frame the page', async () => {
    const config = loadConfig({ SVC_PUBLIC_URL: PUBLIC_URL, SVC_CHECKOUT_FRAME_ANCESTORS: 'https://shop.example, https://www.shop.example:8443' });
    const framable = createHttp({
      store: db.store,
      logger: createLogger({ level: 'silent' }),
      metrics: createMetricsRegistry({ defaultMetrics: false }),
      config,
      box,
      rateLimits: GENEROUS_LIMITS,
    });
    try {
      const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '4' });
      const response = await framable.inject({ method: 'GET', url: `/checkout/${session.id}`, headers: { accept: 'text/html' } });
      expect(response.statusCode).toBe(200);
      expect(String(response.headers['content-security-policy'])).toContain('frame-ancestors https://shop.example https://www.shop.example:8443;');
      expect(response.headers['x-frame-options']).toBeUndefined();
    } finally {
      await framable.close();
    }
    expect(() => loadConfig({ SVC_CHECKOUT_FRAME_ANCESTORS: 'https://shop.example/checkout' })).toThrow(/SVC_CHECKOUT_FRAME_ANCESTORS=.*no path/);
    expect(() => loadConfig({ SVC_CHECKOUT_FRAME_ANCESTORS: "'self' javascript:x" })).toThrow(/SVC_CHECKOUT_FRAME_ANCESTORS/);
  });

  test('the QR endpoint serves an SVG of the payment URI under its own locked-down CSP', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '5' });
    const response = await app.inject({ method: 'GET', url: `/checkout/${session.id}/qr.svg` });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('image/svg+xml');
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.body).toMatch(/^<svg /);
    expect(response.body).toContain(`aria-label="QR code of ethereum:${POLYGON_USDC}@80002/transfer?address=${sandboxPayTo('polygon')}&amp;uint256=5000000"`);
  });
});

describe('refund requests from the page', () => {
  test('refused before money arrived, with a bad or merchant address, accepted once paid, then one open request at a time', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '9' });
    const url = `/checkout/${session.id}/refund`;
    const destination = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

    expect(await post(url, { destination })).toEqual({ status: 409, body: { error: expect.stringContaining('nothing has been received') } });

    await setSessionState(db.store, session.id, { status: 'confirmed', amountReceived: 9_000_000n, confirmations: 32 });
    expect((await get(`/checkout/${session.id}`)).body.refundUrl).toBe(`${PUBLIC_URL}${url}`);
    expect(await post(url, { destination: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293Bc' })).toEqual({
      status: 400,
      body: { error: expect.stringContaining('not a valid polygon address') },
    });
    expect(await post(url, { destination: SOLANA_WALLET })).toMatchObject({ status: 400 });
    expect(await post(url, { destination: session.payTo.toLowerCase() })).toEqual({
      status: 400,
      body: { error: expect.stringContaining("merchant's own wallet") },
    });
    expect((await post(url, { destination, extra: 1 })).status).toBe(400);
    expect((await post(url, {})).status).toBe(400);
    const none = await db.store.query('SELECT count(*)::int AS n FROM refunds WHERE session_id = $1', [session.id]);
    expect(none.rows[0]?.n).toBe(0);

    const created = await post(url, { destination: destination.toLowerCase(), reason: 'Ordered twice', email: 'payer@example.com' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'refund_request',
      sessionId: session.id,
      status: 'requested',
      amount: '9',
      amountBaseUnits: '9000000',
      destination,
    });
    const { rows: events } = await db.store.query(`SELECT type, refund_id, payload FROM events WHERE session_id = $1 AND type = 'refund.requested'`, [
      session.id,
    ]);
    expect(events).toHaveLength(1);
    expect(events[0]?.refund_id).toBe(created.body.id);
    expect(events[0]?.payload.data).toMatchObject({
      id: created.body.id,
      amount: '9',
      address: destination,
      reason: 'Ordered twice',
      metadata: { requestedBy: 'customer', email: 'payer@example.com' },
    });

    expect(await post(url, { destination })).toEqual({ status: 409, body: { error: expect.stringContaining('already open') } });
    expect(await post('/checkout/ses_AAAAAAAAAAAAAAAAAAAA/refund', { destination })).toMatchObject({ status: 404 });
  });

  test('the refund form refuses an address no one can spend from, as a receiving wallet is refused, and records nothing', async () => {
    const evm = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '7' });
    await setSessionState(db.store, evm.id, { status: 'confirmed', amountReceived: 7_000_000n, confirmations: 32 });
    const realUsdc = chains.polygon.tokens.find((t) => t.symbol === 'USDC')!.address;
    const refused: [string, string][] = [
      ['0x0000000000000000000000000000000000000000', 'is the zero address (tokens sent there are burned) on polygon'],
      ['0x000000000000000000000000000000000000dEaD', 'is the 0x…dEaD burn address (tokens sent there are burned) on polygon'],
      [realUsdc, 'is the USDC token contract itself (tokens sent to it are stuck there) on polygon'],
      [fakeAddress('polygon'), 'is a sandbox address'],
    ];
    for (const [destination, reason] of refused) {
      const answer = await post(`/checkout/${evm.id}/refund`, { destination });
      expect(answer).toEqual({ status: 400, body: { error: expect.stringContaining(reason) } });
      expect(answer.body.error).toMatch(/^destination 0x[0-9a-fA-F]{40} .*: funds sent there cannot be spent; give a wallet you control$/);
    }
    const sol = await makeSession(db.store, { merchantId: merchant.id, chain: 'solana', merchantWallet: SOLANA_WALLET, amount: '7' });
    await setSessionState(db.store, sol.id, { status: 'confirmed', amountReceived: 7_000_000n, confirmations: 32 });
    for (const [destination, reason] of [
      ['1nc1nerator11111111111111111111111111111111', 'is the incinerator (tokens sent there are burned), not a wallet'],
      [SOLANA_USDC_REAL, 'is the USDC mint itself, not a wallet'],
    ]) {
      expect(await post(`/checkout/${sol.id}/refund`, { destination })).toEqual({
        status: 400,
        body: { error: expect.stringContaining(`${destination} ${reason} on solana`) },
      });
    }
    const { rows } = await db.store.query('SELECT count(*)::int AS n FROM refunds WHERE session_id = ANY($1)', [[evm.id, sol.id]]);
    expect(rows[0]?.n).toBe(0);
  });

  test('a session gets at most three refund requests in all, so a page cannot flood the merchant', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '6' });
    await setSessionState(db.store, session.id, { status: 'confirmed', amountReceived: 6_000_000n, confirmations: 32 });
    const url = `/checkout/${session.id}/refund`;
    const destination = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
    for (let i = 0; i < 3; i++) {
      expect((await post(url, { destination })).status).toBe(201);
      // The merchant declines it (as POST /refunds/{id}/reject would), which frees the amount again.
      await db.store.query(`UPDATE refunds SET status = 'rejected', rejected_at = now() WHERE session_id = $1 AND status = 'requested'`, [session.id]);
    }
    expect(await post(url, { destination })).toEqual({
      status: 429,
      body: { error: 'at most 3 refund requests can be made for one payment; contact the merchant' },
    });
    const { rows } = await db.store.query(`SELECT count(*)::int AS n FROM events WHERE session_id = $1 AND type = 'refund.requested'`, [session.id]);
    expect(rows[0]?.n).toBe(3);
  });
});
