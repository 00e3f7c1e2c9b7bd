import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { Hono } from 'hono';
import { wrapFetchWithPayment, x402Client, x402HTTPClient, decodePaymentResponseHeader } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/hono';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { installEip3009Token } from '../helpers/eip3009Token.ts';
import type { newMerchant } from '../helpers/api.ts';
import { eventsOf } from '../helpers/engine.ts';
import { waitFor } from '../helpers/waitFor.ts';
import type { startLivePipeline, startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { startAnvilX402Stack } from '../helpers/x402Stack.ts';

/**
 * x402 end to end on anvil as polygon (chain 137) with a FiatToken-compatible EIP-3009 token at
 * the real USDC address: the real @x402/fetch client (with @x402/evm and a payer key) pays a
 * session's x402 URL; the gateway's relayer submits the authorization; the real EVM ingester
 * sees the transfer, the engine confirms the session and the merchant's receiver gets verified
 * webhooks. Then exactly-once (the same signature again and five times at once), and an
 * @x402/hono resource server settling through the gateway's facilitator endpoints.
 */
const db = useTestDatabase('x402_e2e');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const payer = privateKeyToAccount(generatePrivateKey());
const relayerKey = generatePrivateKey();
let anvil: Anvil;
let stack: Awaited<ReturnType<typeof startAnvilX402Stack>>;
let pipeline: ReturnType<typeof startLivePipeline>;
let baseUrl: string;
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let merchant: Awaited<ReturnType<typeof newMerchant>>;
let wallet: Address;

/** The payer's x402 client: @x402/evm's exact scheme on polygon, signing with the payer key. */
function payerClient() {
  return new x402Client().register('eip155:137', new ExactEvmScheme(payer));
}

beforeAll(async () => {
  stack = await startAnvilX402Stack({
    db,
    chain,
    relayerKey,
    merchantName: 'Agent Shop',
    prepare: async (anvil) => {
      await installEip3009Token(anvil, USDC, 6);
      await anvil.waitMined(await anvil.mint(USDC, payer.address, 100_000_000n));
    },
  });
  ({ anvil, pipeline, baseUrl, merchant, wallet, receiver } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** The merchant API over HTTP with the live key. */
const api: typeof stack.api = (...args) => stack.api(...args);

async function createSession(amount: string) {
  const answer = await api('POST', '/api/v1/sessions', { amount, currency: 'USDC', chain, merchantWallet: wallet });
  expect(answer.status).toBe(201);
  return answer.body as { id: string; amountDueBaseUnits: string; x402Url: string };
}

/** How the engine attributed the transfer of `txHash`. */
async function matchOf(txHash: string) {
  const { rows } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [txHash.toLowerCase()]);
  return rows[0];
}

const settlements = async () => Number((await db.store.query('SELECT count(*)::int AS n FROM x402_settlements')).rows[0]!.n);

/** A signed payment header for a session, made by the real client from the session's 402. */
async function signedHeader(sessionId: string): Promise<Record<string, string>> {
  const client = payerClient();
  const challenge = await fetch(`${baseUrl}/checkout/${sessionId}/x402`);
  expect(challenge.status).toBe(402);
  const httpClient = new x402HTTPClient(client);
  const required = httpClient.getPaymentRequiredResponse((name) => challenge.headers.get(name));
  return httpClient.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
}

const sessionCount = async () => Number((await db.store.query('SELECT count(*)::int AS n FROM payment_sessions')).rows[0]!.n);

/** A client of the gateway's facilitator endpoints with the merchant's live key, as a resource server sets it up. */
function facilitatorClient() {
  return new HTTPFacilitatorClient({
    url: `${baseUrl}/api/v1/x402`,
    createAuthHeaders: async () => {
      const auth = { authorization: `Bearer ${merchant.live}` };
      return { verify: auth, settle: auth, supported: auth };
    },
  });
}

/** An @x402/hono shop selling `GET /weather` at `price`, settling through the gateway; run in process, its fetch handler is the client's transport. */
function shopAt(price: string) {
  const server = new x402ResourceServer(facilitatorClient()).register('eip155:137', new ExactEvmServerScheme());
  const shop = new Hono();
  shop.use(
    paymentMiddleware({ 'GET /weather': { accepts: { scheme: 'exact', price, network: 'eip155:137', payTo: wallet }, description: 'Weather' } }, server),
  );
  shop.get('/weather', (c) => c.json({ weather: 'sunny' }));
  return (input: string | URL | Request, init?: RequestInit) => Promise.resolve(shop.fetch(new Request(input, init)));
}

/** The session a facilitator settlement of `txHash` was recorded as. */
async function facilitatorSessionOf(txHash: string): Promise<string> {
  const { rows } = await db.store.query(`SELECT session_id FROM x402_settlements WHERE tx_hash = $1 AND source = 'facilitator'`, [txHash]);
  return rows[0]!.session_id as string;
}

describe('x402 on anvil (polygon, EIP-3009 USDC)', () => {
  test('@x402/fetch pays a session; it confirms through the ingester and engine; the merchant gets verified webhooks', async () => {
    const session = await createSession('0.5');
    expect(session.x402Url).toBe(`${baseUrl}/checkout/${session.id}/x402`);
    const challenge = await fetch(session.x402Url);
    expect(challenge.status).toBe(402);
    const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString());
    expect(required).toMatchObject({
      x402Version: 2,
      accepts: [
        { scheme: 'exact', network: 'eip155:137', amount: session.amountDueBaseUnits, asset: USDC, payTo: wallet, extra: { name: 'USD Coin', version: '2' } },
      ],
    });
    expect(required.accepts[0].maxTimeoutSeconds).toBeLessThanOrEqual(300);

    const before = await anvil.balanceOf(USDC, payer.address);
    const fetchWithPay = wrapFetchWithPayment(fetch, payerClient());
    const paid = await fetchWithPay(session.x402Url);
    expect(paid.status).toBe(200);
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:137', payer: payer.address });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await paid.json()).toMatchObject({ object: 'payment_status', id: session.id });
    expect(await anvil.balanceOf(USDC, wallet)).toBe(BigInt(session.amountDueBaseUnits));
    expect(before - (await anvil.balanceOf(USDC, payer.address))).toBe(BigInt(session.amountDueBaseUnits));

    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
    expect((await api('GET', `/api/v1/sessions/${session.id}`)).body.txHash).toBe(settled.transaction);
    // Attributed by the settled transaction (the claim written before broadcast), not by amount.
    expect(await matchOf(settled.transaction)).toEqual({ session_id: session.id, match_method: 'claim' });
    await anvil.mine(32);
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirmed', 'confirmed');
    await waitFor(async () => receiver.received.filter((hook) => hook.sessionId === session.id).length >= 2, 'webhooks');
    expect(receiver.received.filter((hook) => hook.sessionId === session.id).map((hook) => hook.event)).toEqual(['payment.confirming', 'payment.confirmed']);
    // The relayer's gas is read after each settlement; outcomes are counted.
    const exported = await pipeline.metrics.metrics();
    expect(exported).toMatch(/svc_x402_relayer_gas_balance\{chain="polygon",address="0x[0-9a-fA-F]{40}"\} 0\.9\d+/);
    expect(exported).toContain('svc_x402_settlements_total{chain="polygon",outcome="settled"} 1');
    // Paid: the x402 URL now answers the state, so a client does not pay again.
    expect((await fetch(session.x402Url)).status).toBe(200);
  });

  test("@x402/core's default $1 cap refuses a $2 session; the spend limit docs/agents.md sets pays it", async () => {
    const session = await createSession('2');
    await expect(wrapFetchWithPayment(fetch, payerClient())(session.x402Url)).rejects.toThrow(/spendControls/);
    const client = payerClient();
    client.setSpendControls({ maxAmountPerPayment: '$25' });
    const paid = await wrapFetchWithPayment(fetch, client)(session.x402Url);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!).success).toBe(true);
  });

  test('the same signature again, and five times at once, settles once; on another session it is refused', async () => {
    const session = await createSession('0.25');
    const header = await signedHeader(session.id);
    const before = await anvil.balanceOf(USDC, payer.address);
    const count = await settlements();
    const answers = await Promise.all(Array.from({ length: 5 }, () => fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header })));
    const again = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header });
    const transactions = new Set<string>();
    for (const answer of [...answers, again]) {
      expect(answer.status).toBe(200);
      transactions.add(decodePaymentResponseHeader(answer.headers.get('payment-response')!).transaction);
    }
    expect(transactions.size).toBe(1);
    expect(await settlements()).toBe(count + 1);
    expect(before - (await anvil.balanceOf(USDC, payer.address))).toBe(BigInt(session.amountDueBaseUnits));

    const other = await createSession('0.25');
    const refused = await fetch(`${baseUrl}/checkout/${other.id}/x402`, { headers: header });
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ reason: 'invalid_exact_evm_nonce_already_used', error: expect.stringContaining('another session') });
    expect(await settlements()).toBe(count + 1);
  });

  test('an @x402/hono resource server settles through the facilitator endpoints into the merchant wallet; a session with webhooks records it', async () => {
    const shopFetch = shopAt('$0.3');
    const before = await anvil.balanceOf(USDC, wallet);
    const answer = await wrapFetchWithPayment(shopFetch, payerClient())('http://shop.example/weather');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ weather: 'sunny' });
    const settled = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:137' });
    expect((await anvil.balanceOf(USDC, wallet)) - before).toBe(300_000n);
    const sessionId = await facilitatorSessionOf(settled.transaction);
    await anvil.mine(33);
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'confirmed', 'facilitator session confirmed');
    expect(await matchOf(settled.transaction)).toEqual({ session_id: sessionId, match_method: 'claim' });
    expect(await eventsOf(db.store, sessionId)).toEqual(['payment.confirming', 'payment.confirmed']);
    await waitFor(async () => receiver.received.filter((hook) => hook.sessionId === sessionId).length >= 2, 'facilitator session webhooks');
  });

  test("a $0.001 micropayment (x402's usual price) settles through the facilitator into a confirmed session of 1000 base units, fee 10; $0.0009 is refused; the API keeps 0.01", async () => {
    const before = await anvil.balanceOf(USDC, wallet);
    const answer = await wrapFetchWithPayment(shopAt('$0.001'), payerClient())('http://shop.example/weather');
    expect(answer.status).toBe(200);
    const settled = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:137', payer: payer.address });
    expect((await anvil.balanceOf(USDC, wallet)) - before).toBe(1_000n);
    const sessionId = await facilitatorSessionOf(settled.transaction);
    await anvil.mine(33);
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'confirmed', 'micropayment confirmed');
    // 1 % of 1000 base units, in base units: 10 (bigint, rounded half up).
    expect((await api('GET', `/api/v1/sessions/${sessionId}`)).body).toMatchObject({
      amount: '0.001',
      amountDue: '0.001',
      amountDueBaseUnits: '1000',
      amountReceived: '0.001',
      fee: '0.00001',
      feeBaseUnits: '10',
      metadata: { source: 'x402-facilitator', payer: payer.address },
    });
    expect(await matchOf(settled.transaction)).toEqual({ session_id: sessionId, match_method: 'claim' });
    await waitFor(async () => receiver.received.filter((hook) => hook.sessionId === sessionId).length >= 2, 'micropayment webhooks');
    expect(receiver.received.filter((hook) => hook.sessionId === sessionId).map((hook) => hook.event)).toEqual(['payment.confirming', 'payment.confirmed']);

    // $0.0009 = 900 base units: the real client's payload for the shop's own 402, refused by /verify and /settle with nothing written or sent.
    const client = payerClient();
    const httpClient = new x402HTTPClient(client);
    const challenge = await shopAt('$0.0009')('http://shop.example/weather');
    expect(challenge.status).toBe(402);
    const required = httpClient.getPaymentRequiredResponse((name) => challenge.headers.get(name));
    expect(required.accepts[0]!.amount).toBe('900');
    const payload = await client.createPaymentPayload(required);
    const [count, sessions, balance] = [await settlements(), await sessionCount(), await anvil.balanceOf(USDC, payer.address)];
    const refusal = {
      invalidReason: 'invalid_exact_evm_authorization_value',
      invalidMessage: expect.stringContaining('minimum x402 settlement of 0.001 (1000 base units)'),
    };
    expect(await facilitatorClient().verify(payload, required.accepts[0]!)).toMatchObject({ isValid: false, ...refusal });
    const refused = await facilitatorClient()
      .settle(payload, required.accepts[0]!)
      .catch((error) => error.response ?? error);
    expect(refused).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_authorization_value' });
    expect([await settlements(), await sessionCount(), await anvil.balanceOf(USDC, payer.address)]).toEqual([count, sessions, balance]);

    // Sessions the API creates keep a cent's minimum (their unique due amounts need the room below it); no body field lowers it.
    for (const body of [
      { amount: '0.001', currency: 'USDC', chain, merchantWallet: wallet },
      { amount: '0.001', currency: 'USDC', chain, merchantWallet: wallet, minimum: '0.001' },
    ]) {
      const created = await api('POST', '/api/v1/sessions', body);
      expect(created.status).toBe(400);
    }
    expect((await api('POST', '/api/v1/sessions', { amount: '0.001', currency: 'USDC', chain, merchantWallet: wallet })).body.error).toBe(
      'amount 0.001 is below the minimum of 0.01',
    );
    expect(await sessionCount()).toBe(sessions);
  });

  test('a merchant whose sessions default to deposit addresses: the settlement is still recorded as a session on the paid wallet, and confirms', async () => {
    await db.store.query("UPDATE merchants SET default_attribution = 'address' WHERE id = $1", [merchant.id]);
    try {
      const answer = await wrapFetchWithPayment(shopAt('$0.2'), payerClient())('http://shop.example/weather');
      expect(answer.status).toBe(200);
      const settled = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
      const sessionId = await facilitatorSessionOf(settled.transaction);
      // The payer paid the wallet in the shop's requirements, not a deposit address of the session's own.
      expect((await api('GET', `/api/v1/sessions/${sessionId}`)).body).toMatchObject({ paymentAddress: wallet, depositAddress: null, attribution: 'amount' });
      await anvil.mine(33);
      await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'confirmed', 'settlement confirmed');
      expect(await matchOf(settled.transaction)).toEqual({ session_id: sessionId, match_method: 'claim' });
    } finally {
      await db.store.query("UPDATE merchants SET default_attribution = 'amount' WHERE id = $1", [merchant.id]);
    }
  });
});
