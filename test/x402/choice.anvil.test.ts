import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { wrapFetchWithPayment, x402Client, x402HTTPClient, decodePaymentResponseHeader } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { installEip3009Token } from '../helpers/eip3009Token.ts';
import { approvePermit2, deployPermit2OnAnvil } from '../helpers/permit2.ts';
import { depositAddressFor } from '../../src/payments/attribution.ts';
import { waitFor } from '../helpers/waitFor.ts';
import type { startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { startAnvilX402Stack } from '../helpers/x402Stack.ts';

/**
 * x402 for sessions waiting for the customer's choice (docs/agents.md, "Waiting sessions"), on
 * anvil as polygon with EIP-3009 USDC and Permit2 USDT: the 402 lists both options; the real
 * @x402/fetch client pays one, which fixes the choice in the settlement's transaction; the
 * ingester, engine and webhooks then treat it as any session. Concurrent payloads for the two
 * options settle once; hostile payloads are refused with nothing moved.
 */
const db = useTestDatabase('x402_choice');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const USDT: Address = '0xc2132D05D31c914a87C6611C10748AEb04B58e8F';
const USDC_E: Address = '0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174';
const payer = privateKeyToAccount(generatePrivateKey());
const relayerKey = generatePrivateKey();
const BOTH = [
  { chain, currency: 'USDC' },
  { chain, currency: 'USDT' },
];
let anvil: Anvil;
let stack: Awaited<ReturnType<typeof startAnvilX402Stack>>;
let baseUrl: string;
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let wallet: Address;

/** The payer's client: EIP-3009 and Permit2 on polygon; USDT named in its spend controls (docs/agents.md). */
function payerClient(account: PrivateKeyAccount = payer) {
  const client = new x402Client().register('eip155:137', new ExactEvmScheme(account));
  client.setSpendControls({
    allowedAssets: [
      { network: 'eip155:137', asset: USDC, maxAmountPerPayment: '5000000' },
      { network: 'eip155:137', asset: USDT, maxAmountPerPayment: '5000000' },
      { network: 'eip155:137', asset: USDC_E, maxAmountPerPayment: '5000000' },
    ],
  });
  return client;
}

beforeAll(async () => {
  stack = await startAnvilX402Stack({
    db,
    chain,
    relayerKey,
    merchantName: 'Choice Shop',
    probe: true,
    prepare: async (anvil) => {
      await installEip3009Token(anvil, USDC, 6);
      await deployPermit2OnAnvil(anvil);
      for (const token of [USDC, USDT, USDC_E]) await anvil.waitMined(await anvil.mint(token, payer.address, 100_000_000n));
      await approvePermit2(anvil, payer, USDT);
      await approvePermit2(anvil, payer, USDC_E);
    },
  });
  ({ anvil, baseUrl, wallet, receiver } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** The merchant API over HTTP with the live key. */
const api: typeof stack.api = (...args) => stack.api(...args);

async function waitingSession(amount: string, extra: Record<string, unknown> = {}) {
  const answer = await api('POST', '/api/v1/sessions', { amount, paymentOptions: BOTH, ...extra });
  expect(answer.status).toBe(201);
  expect(answer.body).toMatchObject({ chain: null, currency: null, choice: null });
  return answer.body as { id: string; x402Url: string | null };
}

const url = (id: string) => `${baseUrl}/checkout/${id}/x402`;

async function challengeOf(id: string) {
  const answer = await fetch(url(id));
  expect(answer.status).toBe(402);
  return JSON.parse(Buffer.from(answer.headers.get('payment-required')!, 'base64').toString());
}

/** A payment header the real client signs for the one entry of the 402 that `pick` selects, changed by `change`. */
async function headerFor(id: string, pick: (accept: { asset: string }) => boolean, change: (accept: Record<string, unknown>) => void = () => {}) {
  const required = await challengeOf(id);
  const accepted = structuredClone(required.accepts.find(pick));
  expect(accepted).toBeDefined();
  change(accepted);
  const client = payerClient();
  return new x402HTTPClient(client).encodePaymentSignatureHeader(await client.createPaymentPayload({ ...required, accepts: [accepted] }));
}

const balances = async () => [
  await anvil.balanceOf(USDC, payer.address),
  await anvil.balanceOf(USDT, payer.address),
  await anvil.balanceOf(USDC_E, payer.address),
];
const settlements = async () => Number((await db.store.query('SELECT count(*)::int AS n FROM x402_settlements')).rows[0]!.n);
const isUsdc = (accept: { asset: string }) => accept.asset === USDC;
const isUsdt = (accept: { asset: string }) => accept.asset === USDT;

describe('x402 for a session waiting for the choice (polygon USDC and USDT)', () => {
  test('the 402 lists one entry per option; @x402/fetch pays USDC, which fixes the choice; webhooks and the view report polygon USDC', async () => {
    const session = await waitingSession('0.5');
    expect(session.x402Url).toBe(url(session.id));
    const required = await challengeOf(session.id);
    expect(required.accepts).toEqual([
      expect.objectContaining({ network: 'eip155:137', asset: USDC, amount: '500000', payTo: wallet, extra: { name: 'USD Coin', version: '2' } }),
      expect.objectContaining({ network: 'eip155:137', asset: USDT, amount: '500000', payTo: wallet, extra: { assetTransferMethod: 'permit2' } }),
    ]);
    expect(required.resource.url).toBe(url(session.id));
    // The chooser's JSON says which options x402 takes.
    const chooser = await fetch(`${baseUrl}/checkout/${session.id}`, { headers: { accept: 'application/json' } });
    expect(((await chooser.json()) as { options: { x402: boolean }[] }).options.map((option: { x402: boolean }) => option.x402)).toEqual([true, true]);

    const paid = await wrapFetchWithPayment(fetch, payerClient())(session.x402Url!);
    expect(paid.status).toBe(200);
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:137', payer: payer.address });
    expect(await anvil.balanceOf(USDC, wallet)).toBe(500000n);
    const view = (await api('GET', `/api/v1/sessions/${session.id}`)).body;
    expect(view).toMatchObject({ chain, currency: 'USDC', choice: { chain, currency: 'USDC' }, amountDueBaseUnits: '500000' });
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
    const { rows } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [settled.transaction.toLowerCase()]);
    expect(rows[0]).toEqual({ session_id: session.id, match_method: 'claim' });
    await anvil.mine(32);
    await waitFor(async () => receiver.envelopes.filter((hook) => hook.data.id === session.id).length >= 2, 'webhooks');
    const hooks = receiver.envelopes.filter((hook) => hook.data.id === session.id);
    expect(hooks.map((hook) => hook.event)).toEqual(['payment.confirming', 'payment.confirmed']);
    for (const hook of hooks) expect(hook.data).toMatchObject({ chain, currency: 'USDC' });
    // Chosen: the URL answers as a single-pair session does (paid: the state, no requirements).
    expect((await fetch(session.x402Url!)).status).toBe(200);
  });

  test('payloads for the two options sent at once: one settles, the other is refused before anything moves', async () => {
    const session = await waitingSession('0.25');
    const usdc = await headerFor(session.id, isUsdc);
    const usdt = await headerFor(session.id, isUsdt);
    const before = await balances();
    const count = await settlements();
    const answers = await Promise.all([fetch(url(session.id), { headers: usdc }), fetch(url(session.id), { headers: usdt })]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 402]);
    const refused = answers.find((answer) => answer.status === 402)!;
    // Refused at the choice (another option chosen in the same instant) or, if it came after, as the chosen session's 402.
    expect(((await refused.json()) as { reason: string }).reason).toMatch(/^(session_not_payable|session_already_being_paid|invalid_exact_evm_\w+)$/);
    expect(await settlements()).toBe(count + 1);
    const after = await balances();
    const spent = before.map((value, i) => value - after[i]!);
    expect(spent.filter((value) => value === 250000n)).toHaveLength(1);
    expect(spent.filter((value) => value === 0n)).toHaveLength(2);
    const view = (await api('GET', `/api/v1/sessions/${session.id}`)).body;
    expect(view.currency).toBe(spent[0] === 250000n ? 'USDC' : 'USDT');
  });

  test('hostile payloads are refused with nothing moved: a pair not offered, an amount off by one, a session chosen otherwise', async () => {
    const session = await waitingSession('0.3');
    const before = await balances();
    const count = await settlements();
    // USDC.e is not among the options (Permit2 signed for it, the network is right).
    const notOffered = await headerFor(session.id, isUsdt, (accept) => {
      accept.asset = USDC_E;
    });
    let answer = await fetch(url(session.id), { headers: notOffered });
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'invalid_exact_evm_asset_mismatch' });
    const offByOne = await headerFor(session.id, isUsdc, (accept) => {
      accept.amount = '300001';
    });
    answer = await fetch(url(session.id), { headers: offByOne });
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'invalid_exact_evm_authorization_value' });
    // Nothing was chosen by the refusals.
    expect((await api('GET', `/api/v1/sessions/${session.id}`)).body.choice).toBeNull();

    const usdc = await headerFor(session.id, isUsdc);
    const chose = await fetch(`${baseUrl}/checkout/${session.id}/choice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ chain, currency: 'USDT' }),
    });
    expect(chose.status).toBeLessThan(400);
    answer = await fetch(url(session.id), { headers: usdc });
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'invalid_exact_evm_asset_mismatch' });
    // Chosen: its 402 is the single-pair one.
    expect((await challengeOf(session.id)).accepts).toEqual([expect.objectContaining({ asset: USDT, amount: '300000' })]);
    expect(await balances()).toEqual(before);
    expect(await settlements()).toBe(count);
  });

  test('amount mode: the 402 asks the due amount the choice would pick; a session taking it meanwhile makes the payload refused, and the next 402 pays', async () => {
    const open = await api('POST', '/api/v1/sessions', { amount: '0.7', currency: 'USDC', chain });
    expect(open.body.amountDueBaseUnits).toBe('700000');
    const session = await waitingSession('0.7');
    const header = await headerFor(session.id, isUsdc);
    expect((await challengeOf(session.id)).accepts[0].amount).toBe('700001');
    const taker = await api('POST', '/api/v1/sessions', { amount: '0.7', currency: 'USDC', chain });
    expect(taker.body.amountDueBaseUnits).toBe('700001');
    const before = await balances();
    const refused = await fetch(url(session.id), { headers: header });
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ reason: 'invalid_exact_evm_authorization_value' });
    expect(await balances()).toEqual(before);
    expect((await api('GET', `/api/v1/sessions/${session.id}`)).body.choice).toBeNull();
    expect((await challengeOf(session.id)).accepts[0].amount).toBe('700002');
    const paid = await wrapFetchWithPayment(fetch, payerClient())(url(session.id));
    expect(paid.status).toBe(200);
    expect((await api('GET', `/api/v1/sessions/${session.id}`)).body).toMatchObject({ currency: 'USDC', amountDueBaseUnits: '700002' });
  });

  test('@x402/fetch pays a payment link with several options: the session it opens is chosen by the payment and belongs to the link', async () => {
    const link = await api('POST', '/api/v1/payment-links', { amount: '0.9', paymentOptions: BOTH });
    expect(link.status).toBe(201);
    const before = await anvil.balanceOf(USDT, wallet);
    const client = payerClient();
    // Prefer the USDT entry: the client takes the first requirement it can pay.
    client.registerPolicy((_version, accepts) => accepts.filter((accept) => accept.asset === USDT));
    const paid = await wrapFetchWithPayment(fetch, client)(`${baseUrl}/pay/${link.body.id}/x402`);
    expect(paid.status).toBe(200);
    const state = (await paid.json()) as { id: string };
    expect(await anvil.balanceOf(USDT, wallet)).toBe(before + 900000n);
    expect((await api('GET', `/api/v1/sessions/${state.id}`)).body).toMatchObject({
      currency: 'USDT',
      paymentLinkId: link.body.id,
      amountDueBaseUnits: '900000',
    });
  });

  test("address mode: each option's payTo is the session's deposit address, known before the choice", async () => {
    const session = await waitingSession('0.4', { attribution: 'address' });
    const deposit = depositAddressFor({ payTo: wallet, sessionId: session.id });
    const required = await challengeOf(session.id);
    expect(required.accepts.map((accept: { payTo: string; amount: string }) => [accept.payTo, accept.amount])).toEqual([
      [deposit, '400000'],
      [deposit, '400000'],
    ]);
    const paid = await fetch(url(session.id), { headers: await headerFor(session.id, isUsdt) });
    expect(paid.status).toBe(200);
    expect(await anvil.balanceOf(USDT, deposit as Address)).toBe(400000n);
    expect((await api('GET', `/api/v1/sessions/${session.id}`)).body).toMatchObject({ currency: 'USDT', depositAddress: deposit });
  });
});
