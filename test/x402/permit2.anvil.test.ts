import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { getAddress, type Address } from 'viem';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { approvePermit2, deployPermit2OnAnvil } from '../helpers/permit2.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { encodeHeader } from '../../src/x402/wire.ts';
import { PERMIT2_ADDRESS, PERMIT2_WITNESS_TYPES, X402_EXACT_PERMIT2_PROXY } from '../../src/x402/permit2/contracts.ts';
import { waitFor } from '../helpers/waitFor.ts';
import type { startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { startAnvilX402Stack } from '../helpers/x402Stack.ts';

/**
 * x402's Permit2 route on anvil as polygon: the canonical Permit2 and x402's exact Permit2 proxy
 * deployed at their canonical addresses through the deterministic deployment proxy, the test
 * ERC-20 at the real USDT address (no EIP-3009), the real @x402/fetch + @x402/evm client paying a
 * USDT session; the ingester, engine and webhooks behind it. Then the hostile permits, concurrent
 * retries, payment-identifier and an address-mode session.
 */
const db = useTestDatabase('x402_permit2');
const chain = 'polygon' as const;
const USDT: Address = '0xc2132D05D31c914a87C6611C10748AEb04B58e8F';
const USDC_E: Address = '0x2791Bca1f2de4661ED88A30C99A7a9449Aa84174';
const payer = privateKeyToAccount(generatePrivateKey());
const relayerKey = generatePrivateKey();
let anvil: Anvil;
let stack: Awaited<ReturnType<typeof startAnvilX402Stack>>;
let baseUrl: string;
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let wallet: Address;

/** The payer's client; USDT on polygon is not one of @x402/core's default assets, so its spend controls name it (docs/agents.md). */
function payerClient(account: PrivateKeyAccount = payer) {
  const client = new x402Client().register('eip155:137', new ExactEvmScheme(account));
  client.setSpendControls({ allowedAssets: [{ network: 'eip155:137', asset: USDT, maxAmountPerPayment: '5000000' }] });
  return client;
}

beforeAll(async () => {
  stack = await startAnvilX402Stack({
    db,
    chain,
    relayerKey,
    merchantName: 'Permit2 Shop',
    probe: true,
    prepare: async (anvil) => {
      await deployPermit2OnAnvil(anvil);
      await anvil.waitMined(await anvil.mint(USDT, payer.address, 100_000_000n));
      await anvil.waitMined(await anvil.mint(USDC_E, payer.address, 100_000_000n));
      await approvePermit2(anvil, payer, USDT);
    },
  });
  ({ anvil, baseUrl, wallet, receiver } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** The merchant API over HTTP with the live key. */
const api: typeof stack.api = (...args) => stack.api(...args);

async function createSession(amount: string, extra: Record<string, unknown> = {}) {
  const answer = await api('POST', '/api/v1/sessions', { amount, currency: 'USDT', chain, merchantWallet: wallet, ...extra });
  expect(answer.status).toBe(201);
  return answer.body as { id: string; amountDueBaseUnits: string; x402Url: string; depositAddress: string | null };
}

async function challengeOf(sessionId: string) {
  const answer = await fetch(`${baseUrl}/checkout/${sessionId}/x402`);
  expect(answer.status).toBe(402);
  return JSON.parse(Buffer.from(answer.headers.get('payment-required')!, 'base64').toString());
}

const settlements = async () => Number((await db.store.query('SELECT count(*)::int AS n FROM x402_settlements')).rows[0]!.n);

/** A Permit2 payment header signed by `signer` for the session's requirements, with `change` applied to what is signed. */
async function permitHeader(
  sessionId: string,
  change: Partial<{ amount: bigint; to: Address; token: Address; spender: Address; deadline: bigint; nonce: bigint; from: Address }> = {},
  signer: PrivateKeyAccount = payer,
  extensions?: Record<string, unknown>,
) {
  const required = await challengeOf(sessionId);
  const accepted = required.accepts[0];
  const now = BigInt(Math.floor(Date.now() / 1000));
  const permit = {
    from: change.from ?? payer.address,
    permitted: { token: change.token ?? getAddress(accepted.asset), amount: change.amount ?? BigInt(accepted.amount) },
    spender: change.spender ?? X402_EXACT_PERMIT2_PROXY,
    nonce: change.nonce ?? BigInt(`0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`),
    deadline: change.deadline ?? now + 120n,
    witness: { to: change.to ?? getAddress(accepted.payTo), validAfter: 0n },
  };
  const signature = await signer.signTypedData({
    domain: { name: 'Permit2', chainId: 137, verifyingContract: PERMIT2_ADDRESS },
    types: PERMIT2_WITNESS_TYPES,
    primaryType: 'PermitWitnessTransferFrom',
    message: permit,
  });
  const text = (value: bigint) => value.toString();
  const payload = {
    x402Version: 2,
    resource: required.resource,
    accepted,
    payload: {
      signature,
      permit2Authorization: {
        ...permit,
        permitted: { token: permit.permitted.token, amount: text(permit.permitted.amount) },
        nonce: text(permit.nonce),
        deadline: text(permit.deadline),
        witness: { to: permit.witness.to, validAfter: '0' },
      },
    },
    ...(extensions ? { extensions } : {}),
  };
  return { 'payment-signature': encodeHeader(payload) };
}

const pay = (sessionId: string, headers: Record<string, string>) => fetch(`${baseUrl}/checkout/${sessionId}/x402`, { headers });

describe('x402 Permit2 on anvil (polygon USDT)', () => {
  test('the canonical contracts are at their canonical addresses; a USDT session offers the Permit2 route', async () => {
    expect(await anvil.client.getCode({ address: PERMIT2_ADDRESS })).toMatch(/^0x60/);
    expect(await anvil.client.getCode({ address: X402_EXACT_PERMIT2_PROXY })).toMatch(/^0x/);
    const session = await createSession('1.5');
    expect(session.x402Url).toBe(`${baseUrl}/checkout/${session.id}/x402`);
    const required = await challengeOf(session.id);
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'eip155:137',
        amount: session.amountDueBaseUnits,
        asset: USDT,
        payTo: wallet,
        maxTimeoutSeconds: expect.any(Number),
        extra: { assetTransferMethod: 'permit2' },
      },
    ]);
    expect(required.extensions['payment-identifier'].info).toEqual({ required: false });
  });

  test('@x402/fetch pays a USDT session through Permit2; it confirms and the merchant gets verified webhooks', async () => {
    const session = await createSession('0.75');
    const before = await anvil.balanceOf(USDT, payer.address);
    const paid = await wrapFetchWithPayment(fetch, payerClient())(session.x402Url);
    expect(paid.status).toBe(200);
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settled).toMatchObject({ success: true, network: 'eip155:137', payer: payer.address });
    const tx = await anvil.client.getTransaction({ hash: settled.transaction as `0x${string}` });
    expect(tx.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase());
    expect(await anvil.balanceOf(USDT, wallet)).toBe(BigInt(session.amountDueBaseUnits));
    expect(before - (await anvil.balanceOf(USDT, payer.address))).toBe(BigInt(session.amountDueBaseUnits));
    const { rows } = await db.store.query('SELECT method, status FROM x402_settlements WHERE tx_hash = $1', [settled.transaction]);
    expect(rows).toEqual([{ method: 'permit2', status: 'settled' }]);

    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'confirming');
    await anvil.mine(32);
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirmed', 'confirmed');
    await waitFor(async () => receiver.received.filter((hook) => hook.sessionId === session.id).length >= 2, 'webhooks');
    expect(receiver.received.filter((hook) => hook.sessionId === session.id).map((hook) => hook.event)).toEqual(['payment.confirming', 'payment.confirmed']);
    const { rows: matched } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [settled.transaction]);
    expect(matched).toEqual([{ session_id: session.id, match_method: 'claim' }]);
  });

  test('hostile permits are refused with a 402 and move nothing: more, less, another recipient, token, spender, signer, expired, replayed', async () => {
    const session = await createSession('0.4');
    const due = BigInt(session.amountDueBaseUnits);
    const other = newEvmWallet() as Address;
    const stranger = privateKeyToAccount(generatePrivateKey());
    const cases: [string, Record<string, string>, string][] = [
      ['more', await permitHeader(session.id, { amount: due + 1n }), 'invalid_exact_evm_authorization_value'],
      ['less', await permitHeader(session.id, { amount: due - 1n }), 'invalid_exact_evm_authorization_value'],
      ['another recipient', await permitHeader(session.id, { to: other }), 'invalid_exact_evm_recipient_mismatch'],
      ['another token', await permitHeader(session.id, { token: USDC_E }), 'permit2_token_mismatch'],
      ['another spender', await permitHeader(session.id, { spender: privateKeyToAccount(relayerKey).address }), 'invalid_permit2_spender'],
      ['another signer', await permitHeader(session.id, {}, stranger), 'invalid_permit2_signature'],
      [
        'expired',
        await permitHeader(session.id, { deadline: BigInt(Math.floor(Date.now() / 1000) - 5) }),
        'invalid_exact_evm_payload_authorization_valid_before',
      ],
    ];
    const before = { payer: await anvil.balanceOf(USDT, payer.address), rows: await settlements() };
    for (const [name, header, reason] of cases) {
      const answer = await pay(session.id, header);
      expect(answer.status, name).toBe(402);
      expect(((await answer.json()) as { reason: string }).reason, name).toBe(reason);
    }
    expect(await anvil.balanceOf(USDT, payer.address)).toBe(before.payer);
    expect(await settlements()).toBe(before.rows);

    // Replayed: the permit that paid this session, sent for another one; and a new signature over its spent nonce.
    const nonce = 12345678901234567890n;
    const good = await permitHeader(session.id, { nonce });
    expect((await pay(session.id, good)).status).toBe(200);
    const next = await createSession('0.4');
    const replayed = await pay(next.id, good);
    expect(replayed.status).toBe(402);
    expect(await replayed.json()).toMatchObject({ reason: 'invalid_exact_evm_nonce_already_used' });
    const reused = await pay(next.id, await permitHeader(next.id, { nonce }));
    expect(reused.status).toBe(402);
    expect(await reused.json()).toMatchObject({ reason: 'invalid_exact_evm_nonce_already_used' });
    expect(before.payer - (await anvil.balanceOf(USDT, payer.address))).toBe(due);
  });

  test('a payer without the one-time Permit2 approval is told so (402 permit2_allowance_required), nothing sent', async () => {
    const fresh = privateKeyToAccount(generatePrivateKey());
    await anvil.waitMined(await anvil.mint(USDT, fresh.address, 10_000_000n));
    const session = await createSession('0.3');
    const count = await settlements();
    const answer = await pay(session.id, await permitHeader(session.id, { from: fresh.address }, fresh));
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'permit2_allowance_required' });
    expect(await settlements()).toBe(count);
  });

  test('the same permit five times at once settles once', async () => {
    const session = await createSession('0.35');
    const header = await permitHeader(session.id);
    const before = await anvil.balanceOf(USDT, payer.address);
    const count = await settlements();
    const answers = await Promise.all(Array.from({ length: 5 }, () => pay(session.id, header)));
    const transactions = new Set<string>();
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      transactions.add(decodePaymentResponseHeader(answer.headers.get('payment-response')!).transaction);
    }
    expect(transactions.size).toBe(1);
    expect(await settlements()).toBe(count + 1);
    expect(before - (await anvil.balanceOf(USDT, payer.address))).toBe(BigInt(session.amountDueBaseUnits));
  });

  test('payment-identifier: a retry with the same id answers the first result; another payload under that id is a 409', async () => {
    const session = await createSession('0.45');
    const id = `pay_${crypto.randomUUID().replaceAll('-', '')}`;
    const extensions = { 'payment-identifier': { info: { required: false, id } } };
    const header = await permitHeader(session.id, {}, payer, extensions);
    const first = await pay(session.id, header);
    expect(first.status).toBe(200);
    const again = await pay(session.id, header);
    expect(again.status).toBe(200);
    expect(again.headers.get('payment-response')).toBe(first.headers.get('payment-response'));
    const count = await settlements();
    const before = await anvil.balanceOf(USDT, payer.address);
    const other = await createSession('0.45');
    const conflicting = await pay(other.id, await permitHeader(other.id, {}, payer, extensions));
    expect(conflicting.status).toBe(409);
    expect(((await conflicting.json()) as { error: string }).error).toContain(id);
    expect(await settlements()).toBe(count);
    expect(await anvil.balanceOf(USDT, payer.address)).toBe(before);
    const malformed = await pay(other.id, await permitHeader(other.id, {}, payer, { 'payment-identifier': { info: { id: 'short' } } }));
    expect(malformed.status).toBe(400);
  });

  test('an address-mode session is paid at its deposit address through x402', async () => {
    const session = await createSession('0.55', { attribution: 'address' });
    expect(session.depositAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const required = await challengeOf(session.id);
    expect(required.accepts[0].payTo).toBe(session.depositAddress);
    const paid = await wrapFetchWithPayment(fetch, payerClient())(session.x402Url);
    expect(paid.status).toBe(200);
    expect(await anvil.balanceOf(USDT, session.depositAddress as Address)).toBe(BigInt(session.amountDueBaseUnits));
    await waitFor(async () => (await api('GET', `/api/v1/sessions/${session.id}`)).body.status === 'confirming', 'address-mode confirming');
  });
});
