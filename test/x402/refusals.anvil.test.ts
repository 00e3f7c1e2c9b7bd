import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { parseSignature, type Address, type Hex } from 'viem';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { installEip3009Token } from '../helpers/eip3009Token.ts';
import { box, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/authorization.ts';
import { EIP3009_ABI } from '../../src/x402/relayer.ts';
import { insertSettlement, signatureHash } from '../../src/x402/settlements.ts';
import { readPaymentHeader } from '../../src/x402/wire.ts';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/client';

/**
 * x402 payments that must be refused, each with its own reason and nothing written (no
 * settlement row, no transfer), and the crash cases of exactly-once: a row a crashed process
 * left `submitting` is resolved from the chain when the payer retries. anvil as polygon with the
 * EIP-3009 token at the real USDC address; no ingester (nothing here needs the engine).
 */
const db = useTestDatabase('x402_refusals');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const payer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());
const relayerKey = generatePrivateKey();
let anvil: Anvil;
let app: ReturnType<typeof createHttp>;
let baseUrl: string;
let merchant: Awaited<ReturnType<typeof newMerchant>>;
let wallet: Address;

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await installEip3009Token(anvil, USDC, 6);
  await anvil.waitMined(await anvil.mint(USDC, payer.address, 100_000_000n));
  await anvil.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 18n });
  const config = loadConfig({
    SVC_POLYGON_RPC_URL: anvil.rpcUrl,
    SVC_POLYGON_RELAYER_KEY: relayerKey,
    SVC_PUBLIC_URL: 'http://127.0.0.1:1',
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger({ level: 'silent' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  const x402 = createX402({ store: db.store, logger, metrics, config, pollMs: 100 });
  app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  merchant = await newMerchant(db.store, 'Careful Shop');
  wallet = newEvmWallet() as Address;
  await addWallet(db.store, { merchantId: merchant.id, chain, address: wallet, verifiedBy: 'operator' });
});

afterAll(async () => {
  await app?.close();
  await anvil?.stop();
});

async function createSession(amount: string): Promise<{ id: string; amountDueBaseUnits: string }> {
  const response = await fetch(`${baseUrl}/api/v1/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${merchant.live}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount, currency: 'USDC', chain, merchantWallet: wallet }),
  });
  expect(response.status).toBe(201);
  return response.json() as Promise<{ id: string; amountDueBaseUnits: string }>;
}

interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

const newNonce = () => `0x${randomBytes(32).toString('hex')}` as Hex;
const now = () => BigInt(Math.floor(Date.now() / 1000));

async function sign(authorization: Authorization, signer: PrivateKeyAccount = payer, chainId = 137): Promise<Hex> {
  return signer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId, verifyingContract: USDC },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
}

/** A v2 PAYMENT-SIGNATURE header as @x402/evm writes it, with whatever the case changes. */
async function paymentHeader(
  session: { amountDueBaseUnits: string },
  change: { authorization?: Partial<Authorization>; network?: string; signer?: PrivateKeyAccount; chainId?: number } = {},
) {
  const authorization: Authorization = {
    from: payer.address,
    to: wallet,
    value: BigInt(session.amountDueBaseUnits),
    validAfter: 0n,
    validBefore: now() + 120n,
    nonce: newNonce(),
    ...change.authorization,
  };
  const signature = await sign(authorization, change.signer, change.chainId);
  const network = change.network ?? 'eip155:137';
  const payload = {
    x402Version: 2,
    accepted: {
      scheme: 'exact',
      network,
      amount: session.amountDueBaseUnits,
      asset: USDC,
      payTo: wallet,
      maxTimeoutSeconds: 300,
      extra: { name: 'USD Coin', version: '2' },
    },
    payload: {
      signature,
      authorization: Object.fromEntries(Object.entries(authorization).map(([key, value]) => [key, typeof value === 'bigint' ? value.toString() : value])),
    },
  };
  return { 'payment-signature': Buffer.from(JSON.stringify(payload)).toString('base64'), authorization, signature };
}

/** Uses `nonce` of the payer on the token directly (as another facilitator would), for 1 base unit. */
async function useNonceOnChain(nonce: Hex): Promise<void> {
  const authorization: Authorization = { from: payer.address, to: stranger.address, value: 1n, validAfter: 0n, validBefore: now() + 600n, nonce };
  const { v, r, s } = parseSignature(await sign(authorization));
  const [account] = await anvil.client.getAddresses();
  const hash = await anvil.client.writeContract({
    account: account!,
    chain: anvil.client.chain,
    address: USDC,
    abi: EIP3009_ABI,
    functionName: 'transferWithAuthorization',
    args: [authorization.from, authorization.to, authorization.value, authorization.validAfter, authorization.validBefore, nonce, Number(v), r, s],
  });
  await anvil.waitMined(hash);
}

const count = async (sql: string) => Number((await db.store.query(sql)).rows[0]!.n);
const settlementRowsOf = (sessionId: string) => count(`SELECT count(*)::int AS n FROM x402_settlements WHERE session_id = '${sessionId}'`);
/**
 * Whether the session's relayer transaction is recorded as submitted and already in anvil's pool
 * (it is recorded before it is broadcast: a test that races it must wait for both).
 */
async function relayerTransactionPending(sessionId: string): Promise<boolean> {
  const { rows } = await db.store.query<{ tx_hash: Hex }>(`SELECT tx_hash FROM x402_settlements WHERE session_id = $1 AND status = 'submitted'`, [sessionId]);
  if (!rows[0]) return false;
  return anvil.client.getTransaction({ hash: rows[0].tx_hash }).then(
    () => true,
    () => false,
  );
}
const settlementRows = () => count('SELECT count(*)::int AS n FROM x402_settlements');

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
      const a = signed.authorization;
      const { v, r, s } = parseSignature(signed.signature);
      const copied = await anvil.client.writeContract({
        account: frontRunner!,
        chain: anvil.client.chain,
        address: USDC,
        abi: EIP3009_ABI,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s],
        maxPriorityFeePerGas: 100_000_000_000n,
        maxFeePerGas: 200_000_000_000n,
      });
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
        const { v, r, s } = parseSignature(await sign(spend, griefer));
        await anvil.client.writeContract({
          account: frontRunner!,
          chain: anvil.client.chain,
          address: USDC,
          abi: EIP3009_ABI,
          functionName: 'transferWithAuthorization',
          args: [spend.from, spend.to, spend.value, spend.validAfter, spend.validBefore, spend.nonce, Number(v), r, s],
          maxPriorityFeePerGas: 100_000_000_000n,
          maxFeePerGas: 200_000_000_000n,
        });
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
