import { beforeAll, describe, expect, test } from 'vitest';
import type { Address } from 'viem';
import type { Anvil } from '../helpers/anvil.ts';
import { newNonce, now, USDC, useEip3009Gateway } from '../helpers/eip3009Gateway.ts';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/client';

/**
 * x402 payments that must be refused, each with its own reason and nothing written (no
 * settlement row, no transfer): bad headers, a second signature, a session that cannot be paid;
 * and a v1 client's payment. anvil as polygon with the EIP-3009 token at the real USDC address
 * (eip3009Gateway.ts). What happens to a settlement in flight is settlementRaces.anvil.test.ts.
 */
const gateway = useEip3009Gateway('x402_refusals');
const { db, payer, stranger, createSession, paymentHeader, useNonceOnChain, settlementRowsOf, settlementRows } = gateway;
let anvil: Anvil;
let baseUrl: string;
let wallet: Address;

beforeAll(() => {
  ({ anvil, baseUrl, wallet } = gateway.started());
});

describe('x402 refusals: a reason each, nothing written', () => {
  test('every bad payment header is a 400 or a 402 that says why, and moves nothing', async () => {
    const session = await createSession('0.4');
    const usedNonce = newNonce();
    await useNonceOnChain(usedNonce);
    const base64 = (text: string) => Buffer.from(text).toString('base64');
    const cases: { name: string; headers: { 'payment-signature'?: string; 'x-payment'?: string }; status: number; reason?: string }[] = [
      { name: 'not base64', headers: { 'payment-signature': '%%% not base64 %%%' }, status: 400 },
      { name: 'base64 of no JSON', headers: { 'payment-signature': base64('{"x402Version": 2,') }, status: 400 },
      { name: 'JSON that is not a payment', headers: { 'payment-signature': base64('[1, 2, 3]') }, status: 400 },
      {
        name: 'no authorization',
        headers: { 'payment-signature': base64(JSON.stringify({ x402Version: 2, accepted: { scheme: 'exact', network: 'eip155:137' }, payload: {} })) },
        status: 400,
      },
      { name: 'v1 header that is not base64', headers: { 'x-payment': 'eyJ@' }, status: 400 },
      {
        name: 'another amount',
        headers: await paymentHeader(session, { authorization: { value: BigInt(session.amountDueBaseUnits) - 1n } }),
        status: 402,
        reason: 'invalid_exact_evm_authorization_value',
      },
      {
        name: 'another recipient',
        headers: await paymentHeader(session, { authorization: { to: stranger.address } }),
        status: 402,
        reason: 'invalid_exact_evm_recipient_mismatch',
      },
      {
        name: 'an expired window',
        headers: await paymentHeader(session, { authorization: { validBefore: now() - 10n } }),
        status: 402,
        reason: 'invalid_exact_evm_payload_authorization_valid_before',
      },
      {
        name: 'a window not open yet',
        headers: await paymentHeader(session, { authorization: { validAfter: now() + 3600n } }),
        status: 402,
        reason: 'invalid_exact_evm_payload_authorization_valid_after',
      },
      {
        name: 'an unsupported network',
        headers: await paymentHeader(session, { network: 'eip155:8453', chainId: 8453 }),
        status: 402,
        reason: 'invalid_exact_evm_network_mismatch',
      },
      { name: 'signed for another chain', headers: await paymentHeader(session, { chainId: 1 }), status: 402, reason: 'invalid_exact_evm_signature' },
      { name: "someone else's signature", headers: await paymentHeader(session, { signer: stranger }), status: 402, reason: 'invalid_exact_evm_signature' },
      {
        name: 'a nonce used on chain',
        headers: await paymentHeader(session, { authorization: { nonce: usedNonce } }),
        status: 402,
        reason: 'invalid_exact_evm_nonce_already_used',
      },
      {
        name: 'more than the payer holds',
        headers: await paymentHeader(session, { signer: stranger, authorization: { from: stranger.address } }),
        status: 402,
        reason: 'invalid_exact_evm_insufficient_balance',
      },
    ];
    const balance = await anvil.balanceOf(USDC, wallet);
    const unpaid = await fetch(`${baseUrl}/checkout/${session.id}/x402`);
    const unpaidError = ((await unpaid.json()) as { error: string }).error;
    for (const item of cases) {
      const headers = Object.fromEntries(Object.entries(item.headers).filter(([key]) => key === 'payment-signature' || key === 'x-payment')) as Record<
        string,
        string
      >;
      const answer = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers });
      const body = (await answer.json()) as { error: string; reason?: string };
      expect(answer.status, item.name).toBe(item.status);
      expect(body.error, item.name).toEqual(expect.any(String));
      expect(body.error, item.name).not.toBe(unpaidError);
      if (item.reason) {
        expect(body.reason, item.name).toBe(item.reason);
        const required = JSON.parse(Buffer.from(answer.headers.get('payment-required')!, 'base64').toString());
        expect(required.error, item.name).toContain(item.reason);
      }
    }
    expect(await settlementRows()).toBe(0);
    expect(await anvil.balanceOf(USDC, wallet)).toBe(balance);
    // The session is still payable with a good signature.
    const good = await paymentHeader(session);
    const paid = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': good['payment-signature'] } });
    expect(paid.status).toBe(200);
    expect(await anvil.balanceOf(USDC, wallet)).toBe(balance + BigInt(session.amountDueBaseUnits));
  });

  test('a second signature for a session already paid by x402 is refused; the first one replays', async () => {
    const session = await createSession('0.6');
    const first = await paymentHeader(session);
    expect((await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': first['payment-signature'] } })).status).toBe(200);
    const second = await paymentHeader(session);
    const refused = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': second['payment-signature'] } });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { reason: string }).reason).toBe('session_already_being_paid');
    const sameNonce = await paymentHeader(session, { authorization: { nonce: first.authorization.nonce, validBefore: first.authorization.validBefore + 1n } });
    const reused = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': sameNonce['payment-signature'] } });
    expect(((await reused.json()) as { reason: string }).reason).toBe('invalid_exact_evm_nonce_already_used');
    const replayed = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': first['payment-signature'] } });
    expect(replayed.status).toBe(200);
    expect(await settlementRowsOf(session.id)).toBe(1);
  });
});

describe('x402 on a session that cannot be paid', () => {
  test('a good signature for an expired session: 402 session_not_payable with nothing to sign, nothing sent; the URL itself answers 410', async () => {
    const session = await createSession('0.35');
    const signed = await paymentHeader(session);
    await db.store.query(`UPDATE payment_sessions SET status = 'expired', expires_at = now() - interval '1 second' WHERE id = $1`, [session.id]);
    const balance = await anvil.balanceOf(USDC, wallet);
    const answer = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': signed['payment-signature'] } });
    expect(answer.status).toBe(402);
    expect(await answer.json()).toMatchObject({ reason: 'session_not_payable', accepts: [] });
    expect(JSON.parse(Buffer.from(answer.headers.get('payment-required')!, 'base64').toString()).accepts).toEqual([]);
    expect(await anvil.balanceOf(USDC, wallet)).toBe(balance);
    expect(await settlementRowsOf(session.id)).toBe(0);
    expect((await fetch(`${baseUrl}/checkout/${session.id}/x402`)).status).toBe(410);
  });
});

describe('x402 v1', () => {
  test("a v1 client pays from the 402 body's requirements with X-PAYMENT and gets X-PAYMENT-RESPONSE", async () => {
    const session = await createSession('0.9');
    const challenge = await fetch(`${baseUrl}/checkout/${session.id}/x402`);
    const body = (await challenge.json()) as { x402Version: number; accepts: { network: string; maxAmountRequired: string }[] };
    expect(body.x402Version).toBe(1);
    expect(body.accepts).toEqual([expect.objectContaining({ network: 'polygon', maxAmountRequired: session.amountDueBaseUnits, asset: USDC, payTo: wallet })]);
    const requirement = body.accepts[0]!;
    const partial = await new ExactEvmSchemeV1(payer).createPaymentPayload(1, requirement as never);
    const header = Buffer.from(JSON.stringify({ ...partial, scheme: 'exact', network: 'polygon' })).toString('base64');
    const paid = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'x-payment': header } });
    expect(paid.status).toBe(200);
    expect(JSON.parse(Buffer.from(paid.headers.get('x-payment-response')!, 'base64').toString())).toMatchObject({
      success: true,
      network: 'polygon',
      payer: payer.address,
    });
  });
});
