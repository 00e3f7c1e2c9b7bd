import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Address, KeyPairSigner } from '@solana/kit';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { toClientSvmSigner } from '@x402/svm';
import { useTestDatabase } from '../helpers/db.ts';
import { box, httpApi } from '../helpers/api.ts';
import type { SolanaTestRpc } from '../helpers/solanaRpc.ts';
import { startIngesterWithEngine, waitFor } from '../helpers/solanaIngest.ts';
import { startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { startSvmX402Stack } from '../helpers/svmX402Stack.ts';
import { createDelivery } from '../../src/delivery/index.ts';
import { insertSettlement, markSubmitted } from '../../src/x402/settlements.ts';
import { getBase64Encoder, getTransactionDecoder } from '@solana/kit';

/**
 * x402 `exact` on Solana end to end, on litesvm (the real SPL token program, the mainnet USDC
 * mint) behind the test JSON-RPC server: the real @x402/fetch client with @x402/svm's exact scheme
 * and a payer keypair pays a session's x402 URL; the gateway checks the transaction, co-signs it
 * with its fee payer (SVC_SOLANA_RELAYER_KEY, SOL only) and sends it once; the real Solana
 * ingester sees the transfer, the engine attributes it by the claim and confirms it at
 * ``finalized`; the merchant's receiver gets verified webhooks. Then exactly once: the same
 * payment again, and five times at once.
 */
const db = useTestDatabase('x402_svm');
let stack: Awaited<ReturnType<typeof startSvmX402Stack>>;
let feePayerKey: Awaited<ReturnType<typeof startSvmX402Stack>>['feePayerKey'];
let rpc: SolanaTestRpc;
let baseUrl: string;
let merchant: Awaited<ReturnType<typeof startSvmX402Stack>>['merchant'];
let wallet: KeyPairSigner;
let payer: KeyPairSigner;
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let pipeline: Awaited<ReturnType<typeof startIngesterWithEngine>>;
let delivery: ReturnType<typeof createDelivery>;
let metrics: Awaited<ReturnType<typeof startSvmX402Stack>>['metrics'];
let x402: Awaited<ReturnType<typeof startSvmX402Stack>>['x402'];

function payerClient() {
  return new x402Client().register('solana:*', new ExactSvmScheme(toClientSvmSigner(payer), { rpcUrl: rpc.url }));
}

beforeAll(async () => {
  stack = await startSvmX402Stack({ db, merchantName: 'Agent Shop' });
  ({ rpc, feePayerKey, baseUrl, merchant, wallet, payer, metrics, x402 } = stack);
  receiver = await startVerifyingReceiver();
  const registered = await api('POST', '/api/v1/webhooks', { url: receiver.url });
  expect(registered.status).toBe(201);
  receiver.useSecret(registered.body.secret);
  pipeline = await startIngesterWithEngine({ store: db.store, rpc });
  delivery = createDelivery({
    store: db.store,
    logger: stack.logger,
    metrics,
    config: { webhookAllowPrivate: true, webhookAllowPrivateSandbox: true },
    box,
    pollIntervalMs: 50,
  });
  await delivery.start();
});

afterAll(async () => {
  await delivery?.stop();
  await pipeline?.stop();
  await receiver?.close();
  await stack?.close();
});

const api = httpApi(
  () => baseUrl,
  () => merchant.live,
);

async function createSession(amount: string) {
  const answer = await api('POST', '/api/v1/sessions', { amount, currency: 'USDC', chain: 'solana', merchantWallet: wallet.address });
  expect(answer.status).toBe(201);
  return answer.body as { id: string; amountDueBaseUnits: string; x402Url: string };
}

const settlements = () => stack.settlements();
const usdc = (owner: Address) => stack.usdc(owner);

/** A payment header for a session, made by the real client from the session's 402 (with `extensions` added, if given). */
async function signedHeader(sessionId: string, extensions?: Record<string, unknown>): Promise<Record<string, string>> {
  const client = payerClient();
  const challenge = await fetch(`${baseUrl}/checkout/${sessionId}/x402`);
  expect(challenge.status).toBe(402);
  const httpClient = new x402HTTPClient(client);
  const required = httpClient.getPaymentRequiredResponse((name) => challenge.headers.get(name));
  const payload = await client.createPaymentPayload(required);
  return httpClient.encodePaymentSignatureHeader(extensions ? { ...payload, extensions } : payload);
}

/** A session waiting for the customer's (or the payment's) choice between USDC and USDT on solana. */
async function waitingSession(amount: string) {
  const options = [
    { chain: 'solana', currency: 'USDC' },
    { chain: 'solana', currency: 'USDT' },
  ];
  const created = await api('POST', '/api/v1/sessions', { amount, paymentOptions: options });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created;
}

describe('x402 exact on Solana (litesvm, mainnet USDC mint)', () => {
  test('@x402/fetch with @x402/svm pays a session; the fee payer pays only the fee; it confirms through the ingester and engine with webhooks', async () => {
    const session = await createSession('0.5');
    expect(session.x402Url).toBe(`${baseUrl}/checkout/${session.id}/x402`);
    const challenge = await fetch(session.x402Url);
    expect(challenge.status).toBe(402);
    const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString());
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
        amount: session.amountDueBaseUnits,
        asset: rpc.mints.USDC,
        payTo: wallet.address,
        maxTimeoutSeconds: 60,
        extra: { feePayer: feePayerKey.address },
      },
    ]);

    const payerBefore = await usdc(payer.address);
    const solBefore = rpc.ledger.svm.getBalance(feePayerKey.address)!;
    const paid = await wrapFetchWithPayment(fetch, payerClient())(session.x402Url);
    expect(paid.status).toBe(200);
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', payer: payer.address });
    const entry = rpc.ledger.find(settled.transaction)!;
    expect(entry.meta.err).toBeNull();
    expect(entry.accountKeys[0]).toBe(feePayerKey.address);
    expect(await usdc(wallet.address)).toBe(BigInt(session.amountDueBaseUnits));
    expect(payerBefore - (await usdc(payer.address))).toBe(BigInt(session.amountDueBaseUnits));
    // The fee payer paid the fee (two signatures, a tiny priority fee) and nothing else.
    const spent = solBefore - rpc.ledger.svm.getBalance(feePayerKey.address)!;
    expect(spent).toBeGreaterThanOrEqual(10_000n);
    expect(spent).toBeLessThan(11_000n);

    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
    const { rows } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [settled.transaction]);
    expect(rows).toEqual([{ session_id: session.id, match_method: 'claim' }]);
    rpc.ledger.finalize();
    // Finalized is solana's confirmation rule and settles it at once.
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'settled', 'settled');
    await waitFor(async () => receiver.received.filter((hook) => hook.sessionId === session.id).length >= 3, 'webhooks');
    expect(receiver.received.filter((hook) => hook.sessionId === session.id).map((hook) => hook.event)).toEqual([
      'payment.confirming',
      'payment.confirmed',
      'payment.settled',
    ]);
    const exported = await metrics.metrics();
    expect(exported).toContain('svc_x402_settlements_total{chain="solana",outcome="settled"} 1');
    expect(exported).toMatch(new RegExp(`svc_x402_relayer_gas_balance\\{chain="solana",address="${feePayerKey.address}"\\} 0\\.99`));
    // Paid: the URL answers the state, so a client does not pay again.
    expect((await fetch(session.x402Url)).status).toBe(200);
  });

  test('USDT (the real mainnet mint) the same way: the 402 names the USDT mint, @x402/fetch pays it into the merchant USDT account', async () => {
    await rpc.fund(wallet.address, 'USDT', 0n);
    await rpc.fund(payer.address, 'USDT', 5_000_000n);
    rpc.ledger.finalize();
    const created = await api('POST', '/api/v1/sessions', { amount: '1.10', currency: 'USDT', chain: 'solana', merchantWallet: wallet.address });
    expect(created.status).toBe(201);
    const session = created.body as { id: string; amountDueBaseUnits: string; x402Url: string };
    const challenge = await fetch(session.x402Url);
    expect(challenge.status).toBe(402);
    const [accepted] = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()).accepts;
    expect(accepted).toMatchObject({
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      asset: rpc.mints.USDT,
      amount: session.amountDueBaseUnits,
      payTo: wallet.address,
    });
    const client = payerClient();
    // @x402/core's spend controls know few USDT mints: the payer names the asset it allows.
    client.setSpendControls({ allowedAssets: [{ network: accepted.network, asset: rpc.mints.USDT, maxAmountPerPayment: session.amountDueBaseUnits }] });
    const paid = await wrapFetchWithPayment(fetch, client)(session.x402Url);
    expect(paid.status).toBe(200);
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, payer: payer.address });
    expect(rpc.ledger.tokenBalance(await rpc.ata(wallet.address, 'USDT'))).toBe(BigInt(session.amountDueBaseUnits));
    rpc.ledger.finalize();
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'settled', 'USDT session settled');
  });

  test('a session waiting for the choice between USDC and USDT on solana: the 402 lists both; @x402/fetch pays USDC, which fixes the choice', async () => {
    const created = await waitingSession('0.75');
    expect(created.body).toMatchObject({ chain: null, currency: null, choice: null, x402Url: `${baseUrl}/checkout/${created.body.id}/x402` });
    const challenge = await fetch(created.body.x402Url);
    expect(challenge.status).toBe(402);
    const accepts = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()).accepts;
    expect(accepts).toEqual(
      [rpc.mints.USDC, rpc.mints.USDT].map((asset) => ({
        scheme: 'exact',
        network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
        amount: '750000',
        asset,
        payTo: wallet.address,
        maxTimeoutSeconds: 60,
        extra: { feePayer: feePayerKey.address },
      })),
    );
    const before = await usdc(wallet.address);
    const paid = await wrapFetchWithPayment(fetch, payerClient())(created.body.x402Url);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get('payment-response')!)).toMatchObject({ success: true, payer: payer.address });
    expect((await usdc(wallet.address)) - before).toBe(750_000n);
    const view = (await api('GET', `/api/v1/sessions/${created.body.id}`)).body;
    expect(view).toMatchObject({ chain: 'solana', currency: 'USDC', choice: { chain: 'solana', currency: 'USDC' } });
    rpc.ledger.finalize();
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${created.body.id}`)).body.status === 'settled', 'chosen session settled');
    // Chosen: the URL answers the chosen session's state, and the USDT option is gone.
    expect((await fetch(created.body.x402Url)).status).toBe(200);
  });

  test("an EVM payload naming a Solana option's network is refused as the wrong network, and chooses nothing", async () => {
    // An EIP-3009 payload of x402 v1 whose network is Solana's (a v2 one with that network is
    // read as a Solana payload). Only the EVM options decide between 'wrong asset' and 'wrong
    // network': a Solana option on that network made it 'wrong asset' (commit 0af7840).
    const created = await waitingSession('0.5');
    const count = await settlements();
    const evmPayload = {
      x402Version: 1,
      scheme: 'exact',
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      payload: {
        signature: `0x${'11'.repeat(65)}`,
        authorization: {
          from: '0x000000000000000000000000000000000c0ffEE1',
          to: '0x000000000000000000000000000000000000bEEF',
          value: '500000',
          validAfter: '0',
          validBefore: String(Math.floor(Date.now() / 1000) + 600),
          nonce: `0x${'22'.repeat(32)}`,
        },
      },
    };
    const answer = await fetch(created.body.x402Url, { headers: { 'x-payment': Buffer.from(JSON.stringify(evmPayload)).toString('base64') } });
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'invalid_exact_evm_network_mismatch' });
    expect((await api('GET', `/api/v1/sessions/${created.body.id}`)).body.choice).toBeNull();
    expect(await settlements()).toBe(count);
  });

  test('the same payment again, and five times at once, settles once with one transaction', async () => {
    const session = await createSession('0.25');
    const header = await signedHeader(session.id);
    const before = await usdc(payer.address);
    const count = await settlements();
    const entries = rpc.ledger.entries.length;
    const answers = await Promise.all(Array.from({ length: 5 }, () => fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header })));
    const again = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header });
    const transactions = new Set<string>();
    for (const answer of [...answers, again]) {
      expect(answer.status).toBe(200);
      transactions.add(decodePaymentResponseHeader(answer.headers.get('payment-response')!).transaction);
    }
    expect(transactions.size).toBe(1);
    expect(await settlements()).toBe(count + 1);
    expect(rpc.ledger.entries.length).toBe(entries + 1);
    expect(before - (await usdc(payer.address))).toBe(BigInt(session.amountDueBaseUnits));
    expect(await metrics.metrics()).toMatch(/svc_x402_settlements_total\{chain="solana",outcome="replayed"\} [1-9]/);

    // On another session (another due amount), the same transaction pays nothing.
    const other = await createSession('0.25');
    const refused = await fetch(`${baseUrl}/checkout/${other.id}/x402`, { headers: header });
    expect(refused.status).toBe(402);
    expect(await settlements()).toBe(count + 1);
    expect(rpc.ledger.entries.length).toBe(entries + 1);
  });

  test('the same payment again after its money arrived (nothing left to pay) still answers its settlement, not a 402', async () => {
    const session = await createSession('0.35');
    const header = await signedHeader(session.id);
    const first = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header });
    expect(first.status).toBe(200);
    const transaction = decodePaymentResponseHeader(first.headers.get('payment-response')!).transaction;
    // The ingester has the transfer: the session's 402 would now ask for nothing (CI once met this race).
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
    const entries = rpc.ledger.entries.length;
    const again = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header });
    expect(again.status).toBe(200);
    expect(decodePaymentResponseHeader(again.headers.get('payment-response')!).transaction).toBe(transaction);
    expect(rpc.ledger.entries.length).toBe(entries);
  });

  test('a payment a crashed process recorded but never sent is resolved by the next retry: the same bytes sent, once', async () => {
    const session = await createSession('0.3');
    const header = await signedHeader(session.id);
    const payload = JSON.parse(Buffer.from(header['PAYMENT-SIGNATURE'] ?? header['payment-signature']!, 'base64').toString());
    const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(payload.payload.transaction));
    // What the crashed process left: the row, and the co-signed transaction recorded before sending.
    const signed = await x402.svm.feePayer!.sign(transaction);
    const row = (await insertSettlement(db.store, {
      chain: 'solana',
      tokenAddress: rpc.mints.USDC,
      payer: payer.address,
      nonce: signed.signature,
      livemode: true,
      signatureHash: 'crashed',
      sessionId: session.id,
      merchantId: merchant.id,
      payTo: wallet.address,
      amount: BigInt(session.amountDueBaseUnits),
      validBefore: String(rpc.ledger.slot + 150n),
      source: 'resource',
    }))!;
    expect(await markSubmitted(db.store, row.id, { hash: signed.signature, raw: signed.wire })).toBe(true);
    await db.store.query("UPDATE x402_settlements SET updated_at = now() - interval '1 minute' WHERE id = $1", [row.id]);
    const entries = rpc.ledger.entries.length;
    const count = await settlements();

    const retried = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: header });
    expect(retried.status).toBe(200);
    expect(decodePaymentResponseHeader(retried.headers.get('payment-response')!).transaction).toBe(signed.signature);
    expect(rpc.ledger.entries.length).toBe(entries + 1);
    expect(await settlements()).toBe(count);
    expect(await usdc(wallet.address)).toBeGreaterThanOrEqual(BigInt(session.amountDueBaseUnits));
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
  });

  test('payment-identifier: the 402 declares it; the same id and payload answer the first result; another payload under that id is a 409', async () => {
    const session = await createSession('0.35');
    const challenge = await fetch(session.x402Url);
    const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString());
    expect(required.extensions['payment-identifier'].info).toEqual({ required: false });
    const id = `pay_${crypto.randomUUID().replaceAll('-', '')}`;
    const extensions = { 'payment-identifier': { info: { required: false, id } } };
    const header = await signedHeader(session.id, extensions);
    const first = await fetch(session.x402Url, { headers: header });
    expect(first.status).toBe(200);
    const again = await fetch(session.x402Url, { headers: header });
    expect(again.status).toBe(200);
    expect(again.headers.get('payment-response')).toBe(first.headers.get('payment-response'));
    const [count, entries, before] = [await settlements(), rpc.ledger.entries.length, await usdc(payer.address)];
    const other = await createSession('0.35');
    const conflicting = await fetch(other.x402Url, { headers: await signedHeader(other.id, extensions) });
    expect(conflicting.status).toBe(409);
    expect(((await conflicting.json()) as { error: string }).error).toContain(id);
    expect(await settlements()).toBe(count);
    expect(rpc.ledger.entries.length).toBe(entries);
    expect(await usdc(payer.address)).toBe(before);
    const malformed = await fetch(other.x402Url, { headers: await signedHeader(other.id, { 'payment-identifier': { info: { id: 'short' } } }) });
    expect(malformed.status).toBe(400);
  });
});
