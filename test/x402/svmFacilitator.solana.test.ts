import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Address, KeyPairSigner } from '@solana/kit';
import { Hono } from 'hono';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { paymentMiddleware, x402ResourceServer } from '@x402/hono';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as ExactSvmServerScheme } from '@x402/svm/exact/server';
import { toClientSvmSigner } from '@x402/svm';
import { useTestDatabase } from '../helpers/db.ts';
import { httpApi } from '../helpers/api.ts';
import type { SolanaTestRpc } from '../helpers/solanaRpc.ts';
import { startIngesterWithEngine, waitFor } from '../helpers/solanaIngest.ts';
import { startSvmX402Stack } from '../helpers/svmX402Stack.ts';

/**
 * The facilitator endpoints (`/api/v1/x402/*`) on Solana, on litesvm (the real SPL token program,
 * the mainnet USDC mint) behind the test JSON-RPC server: `/supported` names the fee payer in
 * `extra.feePayer`; an @x402/hono resource server with @x402/svm's server scheme settles through
 * them (the real @x402/fetch + @x402/svm client pays), the settlement becomes a session of the
 * merchant that the real ingester and engine confirm; the same payload settled six times sends
 * one transaction; `/verify` refuses what a session's x402 URL refuses and writes nothing.
 */
const db = useTestDatabase('x402_svm_facilitator');
const NETWORK = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
let stack: Awaited<ReturnType<typeof startSvmX402Stack>>;
let feePayerKey: Awaited<ReturnType<typeof startSvmX402Stack>>['feePayerKey'];
let rpc: SolanaTestRpc;
let baseUrl: string;
let merchant: Awaited<ReturnType<typeof startSvmX402Stack>>['merchant'];
let wallet: KeyPairSigner;
let payer: KeyPairSigner;
let pipeline: Awaited<ReturnType<typeof startIngesterWithEngine>>;

function payerClient() {
  return new x402Client().register('solana:*', new ExactSvmScheme(toClientSvmSigner(payer), { rpcUrl: rpc.url }));
}

function facilitator(key = () => merchant.live) {
  return new HTTPFacilitatorClient({
    url: `${baseUrl}/api/v1/x402`,
    createAuthHeaders: async () => {
      const auth = { authorization: `Bearer ${key()}` };
      return { verify: auth, settle: auth, supported: auth };
    },
  });
}

beforeAll(async () => {
  stack = await startSvmX402Stack({ db, merchantName: 'Agent API' });
  ({ rpc, feePayerKey, baseUrl, merchant, wallet, payer } = stack);
  pipeline = await startIngesterWithEngine({ store: db.store, rpc });
});

afterAll(async () => {
  await pipeline?.stop();
  await stack?.close();
});

const api = httpApi(
  () => baseUrl,
  () => merchant.live,
);
const settlements = () => stack.settlements();
const sessionCount = async () => Number((await db.store.query('SELECT count(*)::int AS n FROM payment_sessions')).rows[0]!.n);
const usdc = (owner: Address) => stack.usdc(owner);

/** Requirements as a resource server builds them from `/supported` (extra.feePayer), and the real client's payload for them. */
async function signedPayment(amount: string, overrides: Partial<PaymentRequirements> = {}) {
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: NETWORK,
    amount,
    asset: rpc.mints.USDC,
    payTo: wallet.address,
    maxTimeoutSeconds: 60,
    extra: { feePayer: feePayerKey.address },
    ...overrides,
  };
  const payload = await payerClient().createPaymentPayload({
    x402Version: 2,
    resource: { url: 'http://shop.example/data', description: 'Data', mimeType: 'application/json' },
    accepts: [requirements],
  });
  return { requirements, payload };
}

describe('x402 facilitator endpoints on Solana', () => {
  test('/supported lists solana with extra.feePayer for a live key, not for a test key', async () => {
    const live = await facilitator().getSupported();
    expect(live.kinds).toContainEqual({ x402Version: 2, scheme: 'exact', network: NETWORK, extra: { feePayer: feePayerKey.address } });
    expect(live.signers['solana:*']).toEqual([feePayerKey.address]);
    const sandbox = await facilitator(() => merchant.test).getSupported();
    expect(sandbox.kinds.some((kind) => kind.network.startsWith('solana:'))).toBe(false);
    expect(sandbox.signers['solana:*']).toBeUndefined();
  });

  test('an @x402/hono resource server with @x402/svm settles through the facilitator into the merchant wallet; a session of the merchant confirms', async () => {
    const server = new x402ResourceServer(facilitator()).register('solana:*', new ExactSvmServerScheme());
    const shop = new Hono();
    shop.use(
      paymentMiddleware(
        { 'GET /weather': { accepts: { scheme: 'exact', price: '$0.3', network: NETWORK, payTo: wallet.address }, description: 'Weather' } },
        server,
      ),
    );
    shop.get('/weather', (c) => c.json({ weather: 'sunny' }));
    const shopFetch = (input: string | URL | Request, init?: RequestInit) => Promise.resolve(shop.fetch(new Request(input, init)));
    const before = await usdc(wallet.address);
    const solBefore = rpc.ledger.svm.getBalance(feePayerKey.address)!;
    const answer = await wrapFetchWithPayment(shopFetch, payerClient())('http://shop.example/weather');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ weather: 'sunny' });
    const settled = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
    expect((await usdc(wallet.address)) - before).toBe(300_000n);
    expect(rpc.ledger.find(settled.transaction)!.accountKeys[0]).toBe(feePayerKey.address);
    // The fee payer paid the fee and nothing else.
    expect(solBefore - rpc.ledger.svm.getBalance(feePayerKey.address)!).toBeLessThan(11_000n);

    const { rows } = await db.store.query(`SELECT session_id, method, status FROM x402_settlements WHERE tx_hash = $1 AND source = 'facilitator'`, [
      settled.transaction,
    ]);
    expect(rows).toMatchObject([{ method: 'svm', status: 'settled' }]);
    const sessionId = rows[0]!.session_id as string;
    const session = (await api('GET', `/api/v1/sessions/${sessionId}`)).body;
    expect(session).toMatchObject({ chain: 'solana', currency: 'USDC', amount: '0.3', metadata: { source: 'x402-facilitator', payer: payer.address } });
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'confirming', 'confirming');
    const { rows: matched } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [settled.transaction]);
    expect(matched).toEqual([{ session_id: sessionId, match_method: 'claim' }]);
    rpc.ledger.finalize();
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'settled', 'settled');
  });

  test('the same payload settled six times (five at once) sends one transaction and records one session', async () => {
    const { requirements, payload } = await signedPayment('250000');
    const client = facilitator();
    expect(await client.verify(payload, requirements)).toEqual({ isValid: true, payer: payer.address });
    const [count, sessions, entries, before] = [await settlements(), await sessionCount(), rpc.ledger.entries.length, await usdc(payer.address)];
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.settle(payload, requirements)));
    answers.push(await client.settle(payload, requirements));
    const transactions = new Set(answers.map((answer) => answer.transaction));
    expect(answers.every((answer) => answer.success)).toBe(true);
    expect(transactions.size).toBe(1);
    expect(new Set(answers.map((answer) => (answer as { sessionId?: string }).sessionId)).size).toBe(1);
    expect(await settlements()).toBe(count + 1);
    expect(await sessionCount()).toBe(sessions + 1);
    expect(rpc.ledger.entries.length).toBe(entries + 1);
    expect(before - (await usdc(payer.address))).toBe(250_000n);
  });

  test("a $0.001 micropayment (1000 base units, x402's usual price) settles into a session of exactly that amount, fee 10, that confirms", async () => {
    const { requirements, payload } = await signedPayment('1000');
    const client = facilitator();
    expect(await client.verify(payload, requirements)).toEqual({ isValid: true, payer: payer.address });
    const before = await usdc(wallet.address);
    const settled = await client.settle(payload, requirements);
    expect(settled).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
    expect((await usdc(wallet.address)) - before).toBe(1_000n);
    const { rows } = await db.store.query(`SELECT session_id FROM x402_settlements WHERE tx_hash = $1 AND source = 'facilitator'`, [settled.transaction]);
    const sessionId = rows[0]!.session_id as string;
    expect((await api('GET', `/api/v1/sessions/${sessionId}`)).body).toMatchObject({
      chain: 'solana',
      amount: '0.001',
      amountDueBaseUnits: '1000',
      feeBaseUnits: '10',
      metadata: { source: 'x402-facilitator', payer: payer.address },
    });
    rpc.ledger.finalize();
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${sessionId}`)).body.status === 'settled', 'micropayment settled');
    expect((await api('GET', `/api/v1/sessions/${sessionId}`)).body.amountReceived).toBe('0.001');
  });

  test('/verify and /settle refuse what a session refuses (wallet, fee payer, amount, mint, test key) and write and send nothing', async () => {
    const client = facilitator();
    const stranger = (await rpc.wallet()).address;
    await rpc.fund(stranger, 'USDC', 0n);
    const [count, sessions, entries] = [await settlements(), await sessionCount(), rpc.ledger.entries.length];
    const cases: [Awaited<ReturnType<typeof signedPayment>>, string][] = [
      [await signedPayment('100000', { payTo: stranger }), 'invalid_exact_svm_payload_recipient_mismatch'],
      [await signedPayment('100000', { extra: { feePayer: stranger } }), 'invalid_exact_svm_fee_payer_mismatch'],
    ];
    // A payload for 0.1 USDC presented with requirements of 0.2, or of USDT: the transfer is checked against the requirements.
    const cheap = await signedPayment('100000');
    cases.push([{ payload: cheap.payload, requirements: { ...cheap.requirements, asset: rpc.mints.USDT } }, 'invalid_exact_svm_payload_mint_mismatch']);
    cases.push([{ payload: cheap.payload, requirements: { ...cheap.requirements, amount: '200000' } }, 'invalid_exact_svm_payload_amount_mismatch']);
    // Below a settlement's minimum (0.001 = 1000 base units): refused by /verify too, not only by /settle.
    cases.push([await signedPayment('999'), 'invalid_exact_svm_payload_amount_mismatch']);
    for (const [{ payload, requirements }, reason] of cases) {
      expect(await client.verify(payload, requirements), reason).toMatchObject({ isValid: false, invalidReason: reason });
      expect(await client.settle(payload, requirements).catch((error) => error.response ?? error)).toMatchObject({ success: false, errorReason: reason });
    }
    const sandbox = await facilitator(() => merchant.test).verify(cheap.payload, cheap.requirements);
    expect(sandbox).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_svm_network_mismatch' });
    expect(await settlements()).toBe(count);
    expect(await sessionCount()).toBe(sessions);
    expect(rpc.ledger.entries.length).toBe(entries);
  });

  test('payment-identifier on /settle: the same id and payload answer the first result; another payload under it is a 409', async () => {
    const id = `pay_${crypto.randomUUID().replaceAll('-', '')}`;
    const withId = (payload: PaymentPayload): PaymentPayload => ({ ...payload, extensions: { 'payment-identifier': { info: { required: false, id } } } });
    const first = await signedPayment('150000');
    const client = facilitator();
    const settled = await client.settle(withId(first.payload), first.requirements);
    expect(settled.success).toBe(true);
    expect((await client.settle(withId(first.payload), first.requirements)).transaction).toBe(settled.transaction);
    const [count, entries] = [await settlements(), rpc.ledger.entries.length];
    const second = await signedPayment('150000');
    const conflict = await api('POST', '/api/v1/x402/settle', {
      x402Version: 2,
      paymentPayload: withId(second.payload),
      paymentRequirements: second.requirements,
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toContain(id);
    expect(await settlements()).toBe(count);
    expect(rpc.ledger.entries.length).toBe(entries);
  });
});
