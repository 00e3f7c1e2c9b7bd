import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { useTestDatabase } from '../helpers/db.ts';
import { startSandboxEngine } from '../helpers/livePipeline.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { box, EVERY_CHAIN_LIVE, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { eventsOf } from '../helpers/engine.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { sandboxToken } from '../../src/checkout/uris.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/authorization.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { waitFor } from '../helpers/waitFor.ts';

/**
 * Sandbox sessions (test keys) answer x402 with the sandbox's fake token on the chain's public
 * test network (polygon: Amoy, 80002), so no real money can move; the settlement is the sandbox's
 * simulated transfer through the real engine. Payment links are x402 resources too. No chain.
 */
const db = useTestDatabase('x402_sandbox');
const payer = privateKeyToAccount(generatePrivateKey());
let simulated: ReturnType<typeof startSandboxEngine>;
let app: ReturnType<typeof createHttp>;
let baseUrl: string;
let merchant: Awaited<ReturnType<typeof newMerchant>>;

beforeAll(async () => {
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const config = loadConfig({ ...EVERY_CHAIN_LIVE, SVC_PUBLIC_URL: 'http://127.0.0.1:1', LOG_LEVEL: 'silent', SVC_SANDBOX_BLOCK_MS: '10' });
  simulated = startSandboxEngine({ store: db.store, logger, metrics, blockMs: 10, intervalMs: 100 });
  const { sandbox } = simulated;
  // No relayer key: live x402 is off, the sandbox's works.
  const x402 = createX402({ store: db.store, logger, metrics, config, sandbox, pollMs: 50 });
  app = createHttp({ store: db.store, logger, metrics, config, box, sandbox, x402, rateLimits: GENEROUS_LIMITS });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  config.publicUrl = baseUrl;
  merchant = await newMerchant(db.store, 'Sandbox Shop');
});

afterAll(async () => {
  await simulated?.close();
  await app?.close();
});

async function api(method: 'GET' | 'POST', url: string, key: string, payload?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
  });
  return { status: response.status, body: await response.json() };
}

/** The payer's client on the sandbox network; the fake token is no default asset, so the spend limit names it. */
function sandboxClient(asset: string) {
  const client = new x402Client().register('eip155:80002', new ExactEvmScheme(payer));
  client.setSpendControls({ allowedAssets: [{ network: 'eip155:80002', asset, maxAmountPerPayment: '5000000' }] });
  return client;
}

function requiredOf(response: Response) {
  return JSON.parse(Buffer.from(response.headers.get('payment-required')!, 'base64').toString());
}

describe('x402 in the sandbox', () => {
  test('a test-key session asks for the fake token on the test network; paying it runs the sandbox through the engine', async () => {
    const created = await api('POST', '/api/v1/sessions', merchant.test, { amount: '2', currency: 'USDC', chain: 'polygon' });
    expect(created.status).toBe(201);
    const session = created.body;
    const challenge = await fetch(session.x402Url);
    expect(challenge.status).toBe(402);
    const [requirement] = requiredOf(challenge).accepts;
    expect(requirement).toMatchObject({ network: 'eip155:80002', amount: session.amountDueBaseUnits, payTo: session.paymentAddress });
    const realUsdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address;
    expect(requirement.asset.toLowerCase()).not.toBe(realUsdc.toLowerCase());

    const paid = await wrapFetchWithPayment(fetch, sandboxClient(requirement.asset))(session.x402Url);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true, network: 'eip155:80002' });
    const read = async () => (await api('GET', `/api/v1/sessions/${session.id}`, merchant.test)).body;
    await waitFor(async () => ['confirmed', 'settled'].includes((await read()).status), 'sandbox confirmed').catch(async (error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await read())} ${await eventsOf(db.store, session.id)}`);
    });
    expect((await eventsOf(db.store, session.id)).slice(0, 2)).toEqual(['payment.confirming', 'payment.confirmed']);
  });

  test('a live session on a chain without a relayer key advertises no x402Url (API and instructions); its resource says x402 is not enabled there (503)', async () => {
    const created = await api('POST', '/api/v1/sessions', merchant.live, { amount: '1', currency: 'USDC', chain: 'base', merchantWallet: payer.address });
    expect(created.status).toBe(201);
    expect(created.body.x402Url).toBeNull();
    expect((await api('GET', `/api/v1/payments/${created.body.id}`, merchant.live)).body.x402Url).toBeNull();
    const instructions = await fetch(`${baseUrl}/checkout/${created.body.id}`, { headers: { accept: 'application/json' } });
    expect(((await instructions.json()) as { x402Url: unknown }).x402Url).toBeNull();
    // The sandbox's x402 runs here: a test session on the same chain does advertise its URL.
    const sandboxSession = await api('POST', '/api/v1/sessions', merchant.test, { amount: '1', currency: 'USDC', chain: 'base' });
    expect(sandboxSession.body.x402Url).toBe(`${baseUrl}/checkout/${sandboxSession.body.id}/x402`);
    const answer = await fetch(`${baseUrl}/checkout/${created.body.id}/x402`);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: string }).error).toContain('SVC_BASE_RELAYER_KEY');
  });

  test('a USDT session is offered through Permit2 (the fake token, the test network); solana sessions have no x402 URL', async () => {
    const usdt = await api('POST', '/api/v1/sessions', merchant.test, { amount: '1', currency: 'USDT', chain: 'polygon' });
    const solana = await api('POST', '/api/v1/sessions', merchant.test, { amount: '1', currency: 'USDC', chain: 'solana' });
    expect(usdt.body.x402Url).toBe(`${baseUrl}/checkout/${usdt.body.id}/x402`);
    const challenge = await fetch(usdt.body.x402Url);
    expect(challenge.status).toBe(402);
    const [accepted] = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()).accepts;
    expect(accepted).toMatchObject({ network: 'eip155:80002', amount: usdt.body.amountDueBaseUnits, extra: { assetTransferMethod: 'permit2' } });
    expect(solana.body.x402Url).toBeNull();
    expect((await fetch(`${baseUrl}/checkout/${solana.body.id}/x402`)).status).toBe(404);
  });

  test("a payment link's x402 URL opens a session and is paid for that session", async () => {
    const link = await api('POST', '/api/v1/payment-links', merchant.test, { amount: '3', currency: 'USDC', chain: 'polygon' });
    expect(link.status).toBe(201);
    const url = `${baseUrl}/pay/${link.body.id}/x402`;
    const challenge = await fetch(url);
    expect(challenge.status).toBe(402);
    const required = requiredOf(challenge);
    const sessionId = /\/checkout\/(ses_\w+)\/x402$/.exec(required.resource.url)![1]!;
    const paid = await wrapFetchWithPayment(fetch, sandboxClient(required.accepts[0].asset))(url);
    expect(paid.status).toBe(200);
    const state = (await paid.json()) as { id: string };
    const { rows } = await db.store.query(
      `SELECT session_id FROM x402_settlements s JOIN payment_sessions p ON p.id = s.session_id WHERE p.payment_link_id = $1`,
      [link.body.id],
    );
    // The client's retry opened no third session: it paid the one its signature names (its first 402 opened the one above).
    expect(rows).toHaveLength(1);
    expect(state.id).toBe(rows[0]!.session_id);
    expect(rows[0]!.session_id).not.toBe(sessionId);
  });

  test('the facilitator with a test key: supported lists the test networks, verify and settle into a verified wallet of the caller only, settle records a sandbox session', async () => {
    const supported = await api('GET', '/api/v1/x402/supported', merchant.test);
    expect(supported.body.kinds).toContainEqual({ x402Version: 2, scheme: 'exact', network: 'eip155:80002' });
    expect(supported.body.kinds).toContainEqual({ x402Version: 1, scheme: 'exact', network: 'polygon-amoy' });
    expect((await api('GET', '/api/v1/x402/supported', merchant.live)).body.kinds).toEqual([]); // no relayer key here

    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId: merchant.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const other = await newMerchant(db.store, 'Other Shop');
    const theirs = newEvmWallet();
    await addWallet(db.store, { merchantId: other.id, chain: 'polygon', address: theirs, verifiedBy: 'operator' });
    const usdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address;
    const asset = sandboxToken({ name: 'polygon', kind: 'evm' }, usdc);
    const body = async (payTo: string, amount = 150_000n) => {
      const authorization = {
        from: payer.address,
        to: payTo as `0x${string}`,
        value: amount,
        validAfter: 0n,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 120),
        nonce: `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}` as `0x${string}`,
      };
      const signature = await payer.signTypedData({
        domain: { name: 'USD Coin', version: '2', chainId: 80002, verifyingContract: asset as `0x${string}` },
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message: authorization,
      });
      const requirements = {
        scheme: 'exact',
        network: 'eip155:80002',
        amount: amount.toString(),
        asset,
        payTo,
        maxTimeoutSeconds: 120,
        extra: { name: 'USD Coin', version: '2' },
      };
      return {
        x402Version: 2,
        paymentRequirements: requirements,
        paymentPayload: {
          x402Version: 2,
          accepted: requirements,
          payload: { signature, authorization: Object.fromEntries(Object.entries(authorization).map(([key, value]) => [key, String(value)])) },
        },
      };
    };
    expect((await api('POST', '/api/v1/x402/verify', merchant.test, await body(theirs))).body).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_recipient_mismatch',
    });
    expect(
      (await api('POST', '/api/v1/x402/verify', merchant.test, { x402Version: 2, paymentPayload: { x402Version: 2 }, paymentRequirements: {} })).status,
    ).toBe(400);
    expect((await api('POST', '/api/v1/x402/settle', merchant.readOnly, await body(wallet))).status).toBe(403);
    const good = await body(wallet);
    expect((await api('POST', '/api/v1/x402/verify', merchant.test, good)).body).toEqual({ isValid: true, payer: payer.address });
    const settled = await api('POST', '/api/v1/x402/settle', merchant.test, good);
    expect(settled.body).toMatchObject({ success: true, network: 'eip155:80002', payer: payer.address, sessionId: expect.stringMatching(/^ses_/) });
    // The same payload again: the same settlement, no second session; another merchant's key: refused.
    expect((await api('POST', '/api/v1/x402/settle', merchant.test, good)).body).toEqual(settled.body);
    expect((await api('POST', '/api/v1/x402/settle', other.test, good)).body).toMatchObject({ success: false });
    // Concurrent settles of a fresh payload: one settlement, one session (the losers' sessions roll back).
    const sessions = async () =>
      Number((await db.store.query(`SELECT count(*)::int AS n FROM payment_sessions WHERE metadata->>'source' = 'x402-facilitator'`)).rows[0]!.n);
    const before = await sessions();
    const fresh = await body(wallet, 170_000n);
    const concurrent = await Promise.all([1, 2, 3, 4].map(() => api('POST', '/api/v1/x402/settle', merchant.test, fresh)));
    expect(new Set(concurrent.map((answer) => JSON.stringify(answer.body))).size).toBe(1);
    expect(concurrent[0]!.body.success).toBe(true);
    expect(await sessions()).toBe(before + 1);
    const session = (await api('GET', `/api/v1/sessions/${settled.body.sessionId}`, merchant.test)).body;
    expect(session).toMatchObject({ livemode: false, amount: '0.15', amountDueBaseUnits: '150000', metadata: { source: 'x402-facilitator' } });
    await waitFor(
      async () => ['confirmed', 'settled'].includes((await api('GET', `/api/v1/sessions/${session.id}`, merchant.test)).body.status),
      'facilitator sandbox session confirmed',
    );
    // A $0.001 micropayment (the facilitator's minimum) settles in the sandbox too; 999 base units is refused.
    expect((await api('POST', '/api/v1/x402/verify', merchant.test, await body(wallet, 999n))).body).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_authorization_value',
    });
    const micro = await api('POST', '/api/v1/x402/settle', merchant.test, await body(wallet, 1_000n));
    expect(micro.body).toMatchObject({ success: true, sessionId: expect.stringMatching(/^ses_/) });
    const microStatus = async () => (await api('GET', `/api/v1/sessions/${micro.body.sessionId}`, merchant.test)).body;
    expect(await microStatus()).toMatchObject({ amount: '0.001', amountDueBaseUnits: '1000', feeBaseUnits: '10' });
    await waitFor(async () => ['confirmed', 'settled'].includes((await microStatus()).status), 'sandbox micropayment confirmed');
  });
  test('a test-key session waiting for the choice lists each option on its test network; paying the base entry chooses base USDC and the sandbox settles it', async () => {
    const options = [
      { chain: 'polygon', currency: 'USDC' },
      { chain: 'base', currency: 'USDC' },
      { chain: 'solana', currency: 'USDC' },
    ];
    const created = await api('POST', '/api/v1/sessions', merchant.test, { amount: '1.5', paymentOptions: options });
    expect(created.status).toBe(201);
    expect(created.body.x402Url).toBe(`${baseUrl}/checkout/${created.body.id}/x402`);
    const challenge = await fetch(created.body.x402Url);
    expect(challenge.status).toBe(402);
    // Solana options are not listed yet (docs/agents.md, Waiting sessions).
    const accepts = requiredOf(challenge).accepts as { network: string; asset: string; amount: string }[];
    expect(accepts.map((accept) => [accept.network, accept.amount])).toEqual([
      ['eip155:80002', '1500000'],
      ['eip155:84532', '1500000'],
    ]);
    const base = accepts[1]!;
    const client = new x402Client().register('eip155:84532', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:84532', asset: base.asset, maxAmountPerPayment: '5000000' }] });
    const paid = await wrapFetchWithPayment(fetch, client)(created.body.x402Url);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true, network: 'eip155:84532' });
    await waitFor(
      async () => ['confirmed', 'settled'].includes((await api('GET', `/api/v1/sessions/${created.body.id}`, merchant.test)).body.status),
      'confirmed',
    );
    expect((await api('GET', `/api/v1/sessions/${created.body.id}`, merchant.test)).body).toMatchObject({
      chain: 'base',
      currency: 'USDC',
      choice: { chain: 'base', currency: 'USDC' },
      livemode: false,
    });
    expect(await eventsOf(db.store, created.body.id)).toContain('payment.confirmed');
  });
  test('a test-key session priced in EUR waiting for the choice: each entry is the price at the sandbox rate; paying one records the price and its quote', async () => {
    const created = await api('POST', '/api/v1/sessions', merchant.test, {
      price: { amount: '49.00', currency: 'EUR' },
      paymentOptions: [
        { chain: 'polygon', currency: 'USDC' },
        { chain: 'base', currency: 'USDC' },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ amount: null, price: { amount: '49.00', currency: 'EUR' }, priceQuote: null });
    const challenge = await fetch(created.body.x402Url);
    expect(challenge.status).toBe(402);
    // 49.00 EUR at the sandbox's fixed rates (src/pricing/sandboxRates.ts) is 52.92 USDC on either chain.
    const accepts = requiredOf(challenge).accepts as { network: string; asset: string; amount: string }[];
    expect(accepts.map((accept) => [accept.network, accept.amount])).toEqual([
      ['eip155:80002', '52920000'],
      ['eip155:84532', '52920000'],
    ]);
    const polygon = accepts[0]!;
    const client = new x402Client().register('eip155:80002', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:80002', asset: polygon.asset, maxAmountPerPayment: '60000000' }] });
    const paid = await wrapFetchWithPayment(fetch, client)(created.body.x402Url);
    expect(paid.status).toBe(200);
    await waitFor(
      async () => ['confirmed', 'settled'].includes((await api('GET', `/api/v1/sessions/${created.body.id}`, merchant.test)).body.status),
      'fiat waiting session confirmed',
    );
    const view = (await api('GET', `/api/v1/sessions/${created.body.id}`, merchant.test)).body;
    expect(view).toMatchObject({
      chain: 'polygon',
      currency: 'USDC',
      amount: '52.92',
      price: { amount: '49.00', currency: 'EUR' },
      priceQuote: { source: 'sandbox' },
    });
  });
  test('a test-key payment link priced in EUR with two options: its x402 URL opens a waiting session at the sandbox rate; paying one chooses it for the link', async () => {
    const link = await api('POST', '/api/v1/payment-links', merchant.test, {
      price: { amount: '49.00', currency: 'EUR' },
      paymentOptions: [
        { chain: 'polygon', currency: 'USDC' },
        { chain: 'base', currency: 'USDC' },
      ],
    });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const url = `${baseUrl}/pay/${link.body.id}/x402`;
    const challenge = await fetch(url);
    expect(challenge.status).toBe(402);
    const accepts = requiredOf(challenge).accepts as { network: string; asset: string; amount: string }[];
    // 52.92 USDC, or a few base units more where an earlier test's session holds that due amount on the wallet.
    expect(accepts.map((accept) => accept.network)).toEqual(['eip155:80002', 'eip155:84532']);
    for (const accept of accepts) expect(BigInt(accept.amount) - 52_920_000n).toSatisfy((offset: bigint) => offset >= 0n && offset < 100n);
    const base = accepts[1]!;
    const client = new x402Client().register('eip155:84532', new ExactEvmScheme(payer));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:84532', asset: base.asset, maxAmountPerPayment: '60000000' }] });
    const paid = await wrapFetchWithPayment(fetch, client)(url);
    expect(paid.status).toBe(200);
    const { rows } = await db.store.query<{ id: string }>('SELECT id FROM payment_sessions WHERE payment_link_id = $1', [link.body.id]);
    expect(rows).toHaveLength(1);
    const view = (await api('GET', `/api/v1/sessions/${rows[0]!.id}`, merchant.test)).body;
    expect(view).toMatchObject({ chain: 'base', currency: 'USDC', amount: '52.92', paymentLinkId: link.body.id, price: { amount: '49.00', currency: 'EUR' } });
  });
});
