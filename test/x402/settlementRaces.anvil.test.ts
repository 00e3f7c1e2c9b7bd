import { beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Address } from 'viem';
import type { Anvil } from '../helpers/anvil.ts';
import { chain, now, USDC, useEip3009Gateway, type Authorization } from '../helpers/eip3009Gateway.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { insertSettlement, signatureHash } from '../../src/x402/settlements.ts';
import { readPaymentHeader } from '../../src/x402/wire.ts';

/**
 * The crash and race cases of exactly-once x402 settlement: a row a crashed process left
 * `submitting` is resolved from the chain when the payer retries; someone else submitting the
 * same authorization first; a payer that keeps front-running the relayer is refused. anvil as
 * polygon with the EIP-3009 token at the real USDC address (eip3009Gateway.ts).
 */
const gateway = useEip3009Gateway('x402_settlement_races');
const { db, stranger, relayerKey, createSession, sign, paymentHeader, useNonceOnChain, frontRun, settlementRowsOf, relayerTransactionPending } = gateway;
let anvil: Anvil;
let baseUrl: string;
let merchant: ReturnType<typeof gateway.started>['merchant'];
let wallet: Address;

beforeAll(() => {
  ({ anvil, baseUrl, merchant, wallet } = gateway.started());
});

describe('x402 crash recovery: a row left in flight is resolved from the chain', () => {
  async function leftSubmitting(session: { id: string }, header: string) {
    const payload = readPaymentHeader(header);
    await insertSettlement(db.store, {
      chain,
      tokenAddress: USDC,
      payer: payload.authorization.from,
      nonce: payload.authorization.nonce,
      livemode: true,
      signatureHash: signatureHash(payload),
      sessionId: session.id,
      merchantId: merchant.id,
      payTo: wallet,
      amount: BigInt(payload.authorization.value),
      validBefore: payload.authorization.validBefore,
      source: 'resource',
    });
    // The process that wrote it died a minute ago, before sending anything.
    await db.store.query(`UPDATE x402_settlements SET updated_at = now() - interval '1 minute' WHERE nonce = $1`, [payload.authorization.nonce]);
  }

  test('submitting, authorization unused on chain: the retry submits it, once', async () => {
    const session = await createSession('0.7');
    const { 'payment-signature': header } = await paymentHeader(session);
    await leftSubmitting(session, header);
    const balance = await anvil.balanceOf(USDC, wallet);
    const answers = await Promise.all([1, 2, 3].map(() => fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': header } })));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((answer) => answer.headers.get('payment-response'))).size).toBe(1);
    expect(await anvil.balanceOf(USDC, wallet)).toBe(balance + BigInt(session.amountDueBaseUnits));
    const { rows } = await db.store.query(`SELECT status, tx_hash FROM x402_settlements WHERE session_id = $1`, [session.id]);
    expect(rows).toEqual([{ status: 'settled', tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
  });

  test('submitting, authorization already used on chain by someone else: failed, nothing sent, the session is free again', async () => {
    const session = await createSession('0.8');
    const signed = await paymentHeader(session);
    await leftSubmitting(session, signed['payment-signature']);
    await useNonceOnChain(signed.authorization.nonce);
    const answer = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': signed['payment-signature'] } });
    expect(answer.status).toBe(402);
    expect(((await answer.json()) as { reason: string }).reason).toBe('invalid_exact_evm_nonce_already_used');
    const { rows } = await db.store.query(`SELECT status, tx_hash FROM x402_settlements WHERE session_id = $1`, [session.id]);
    expect(rows).toEqual([{ status: 'failed', tx_hash: null }]);
    const fresh = await paymentHeader(session);
    expect((await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': fresh['payment-signature'] } })).status).toBe(200);
  });
});

describe('x402 when someone else submits the same authorization first', () => {
  test('the payment happened in their transaction: the payer gets 200 with it, the settlement is settled, and it is no revert against the payer', async () => {
    const honest = privateKeyToAccount(generatePrivateKey());
    await anvil.waitMined(await anvil.mint(USDC, honest.address, 10_000_000n));
    const [frontRunner] = await anvil.client.getAddresses();
    const balance = await anvil.balanceOf(USDC, wallet);
    await anvil.client.setAutomine(false);
    try {
      const session = await createSession('0.04');
      const signed = await paymentHeader(session, { authorization: { from: honest.address }, signer: honest });
      const answer = fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': signed['payment-signature'] } });
      await waitFor(() => relayerTransactionPending(session.id), "the relayer transaction in the node's pool", 10_000);
      // A mempool watcher sends the very same signed authorization with a higher tip.
      const copied = await frontRun(frontRunner!, signed.authorization, signed.signature);
      await anvil.client.mine({ blocks: 1 });
      const paid = await answer;
      expect(paid.status).toBe(200);
      const response = JSON.parse(Buffer.from(paid.headers.get('payment-response')!, 'base64').toString()) as { success: boolean; transaction: string };
      expect(response).toMatchObject({ success: true, transaction: copied.toLowerCase() });
      expect(await anvil.balanceOf(USDC, wallet)).toBe(balance + BigInt(session.amountDueBaseUnits));
      const { rows } = await db.store.query('SELECT status, tx_hash FROM x402_settlements WHERE session_id = $1', [session.id]);
      expect(rows).toEqual([{ status: 'settled', tx_hash: copied.toLowerCase() }]);
      const { rows: claims } = await db.store.query('SELECT source FROM transaction_claims WHERE tx_hash = $1 AND session_id = $2', [
        copied.toLowerCase(),
        session.id,
      ]);
      // Bound by a payer's proof's rules: nothing in their transaction names this session (src/x402/bind.ts).
      expect(claims).toEqual([{ source: 'proof' }]);
    } finally {
      await anvil.client.setAutomine(true);
    }
  });
});

describe('x402 gas griefing: a payer that keeps spending its authorizations first is refused', () => {
  test('after 3 relayer transactions reverted because the payer front-ran them, the payer’s next payment is refused with nothing sent', async () => {
    const griefer = privateKeyToAccount(generatePrivateKey());
    await anvil.waitMined(await anvil.mint(USDC, griefer.address, 10_000_000n));
    const relayer = privateKeyToAccount(relayerKey).address;
    const [frontRunner] = await anvil.client.getAddresses();
    await anvil.client.setAutomine(false);
    try {
      for (let round = 0; round < 3; round++) {
        const session = await createSession('0.05');
        const signed = await paymentHeader(session, { authorization: { from: griefer.address }, signer: griefer });
        const answer = fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': signed['payment-signature'] } });
        // The relayer's transaction is signed, recorded and broadcast (pending: no automine).
        await waitFor(() => relayerTransactionPending(session.id), "the relayer transaction in the node's pool", 10_000);
        // The payer spends the same nonce first (1 base unit to someone else), with a higher tip.
        const spend: Authorization = {
          from: griefer.address,
          to: stranger.address,
          value: 1n,
          validAfter: 0n,
          validBefore: now() + 600n,
          nonce: signed.authorization.nonce,
        };
        await frontRun(frontRunner!, spend, await sign(spend, griefer));
        await anvil.client.mine({ blocks: 1 });
        const refused = await answer;
        expect(refused.status).toBe(402);
        expect(((await refused.json()) as { reason: string }).reason).toBe('transaction_failed');
      }
      const { rows } = await db.store.query(`SELECT status, tx_hash IS NOT NULL AS sent FROM x402_settlements WHERE payer = $1`, [
        griefer.address.toLowerCase(),
      ]);
      expect(rows).toEqual([1, 2, 3].map(() => ({ status: 'failed', sent: true })));

      // The fourth: a perfectly valid authorization, refused before anything is written or sent.
      const relayerNonce = await anvil.client.getTransactionCount({ address: relayer, blockTag: 'pending' });
      const session = await createSession('0.05');
      const signed = await paymentHeader(session, { authorization: { from: griefer.address }, signer: griefer });
      const answer = await fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': signed['payment-signature'] } });
      expect(answer.status).toBe(402);
      expect(((await answer.json()) as { reason: string }).reason).toBe('payer_recent_reverts');
      expect(await settlementRowsOf(session.id)).toBe(0);
      expect(await anvil.client.getTransactionCount({ address: relayer, blockTag: 'pending' })).toBe(relayerNonce);
      // Another payer is not affected.
      const other = await paymentHeader(session);
      const paying = fetch(`${baseUrl}/checkout/${session.id}/x402`, { headers: { 'payment-signature': other['payment-signature'] } });
      await waitFor(() => relayerTransactionPending(session.id), "the other payer's relayer transaction in the node's pool", 10_000);
      await anvil.client.mine({ blocks: 1 });
      expect((await paying).status).toBe(200);
    } finally {
      await anvil.client.setAutomine(true);
    }
  });
});
