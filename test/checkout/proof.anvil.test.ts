import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { pad } from 'viem';
import { USDC, useProofDaemon } from '../helpers/proofDaemon.ts';
import { testContractRuntime } from '../helpers/solidity.ts';
import { newEvmWallet } from '../helpers/engine.ts';

/**
 * Payers prove payments by transaction hash and their signature (POST /checkout/{id}/transactions)
 * against a real chain (anvil as polygon, the real USDC address) and the daemon as it is deployed
 * (test/helpers/proofDaemon.ts). The attacks of issue 24 are in proofAttacks.anvil.test.ts.
 */
const harness = useProofDaemon('checkout_proof_anvil');
const { db, http, prove, pay, newSession, lookAlikes, statusOf, startIngest, checked, until, webhooksOf } = harness;

describe('POST /checkout/{id}/transactions', () => {
  test('a payment no amount could attribute, proved before any ingester stored it: 202, then bound by the claim and confirmed with webhooks', async () => {
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    const answer = await prove(second.id, hash);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ object: 'transaction_proof', sessionId: second.id, chain: 'polygon', txHash: hash.toLowerCase(), bound: false });
    expect(answer.body.payment).toMatchObject({ object: 'payment_status', id: second.id, view: 'awaiting' });
    expect((await db.store.query('SELECT session_id, source FROM transaction_claims WHERE tx_hash = $1', [hash])).rows).toEqual([
      { session_id: second.id, source: 'proof' },
    ]);

    await startIngest();
    expect(await checked(hash)).toEqual({ session_id: second.id, match_method: 'claim' });
    await until(async () => (await statusOf(second.id)) === 'confirming', 'confirming');
    await harness.anvil.mine(32);
    await until(async () => (await statusOf(second.id)) === 'confirmed', 'confirmed');
    await until(async () => (await webhooksOf(second.id)).length >= 2, 'webhooks');
    expect(await webhooksOf(second.id)).toEqual(['payment.confirming', 'payment.confirmed']);
    expect(await statusOf(first.id)).toBe('created');
    expect(await webhooksOf(first.id)).toEqual([]);
  }, 90_000);

  test('proved after the ingester left it unmatched: 200 and counted at once; the same proof again answers the same; another session gets 409', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    expect(await checked(hash)).toEqual({ session_id: null, match_method: null });

    const answer = await prove(second.id, hash);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ bound: true, txHash: hash.toLowerCase(), payment: { status: 'confirming', view: 'detected', amountPending: '9.99' } });
    const again = await prove(second.id, hash.toUpperCase().replace('0X', '0x'));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ bound: true, txHash: hash.toLowerCase() });
    const other = await prove(first.id, hash);
    expect(other).toEqual({ status: 409, body: { error: `transaction ${hash.toLowerCase()} is already claimed by another payment session` } });
    expect(await statusOf(first.id)).toBe('created');
  }, 60_000);

  test('concurrent proofs of one transaction for two sessions: exactly one wins', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    await checked(hash);
    const answers = await Promise.all([prove(first.id, hash), prove(second.id, hash)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const winner = answers.find((answer) => answer.status === 200)!.body.sessionId;
    expect((await db.store.query('SELECT session_id FROM transfers WHERE tx_hash = $1', [hash.toLowerCase()])).rows).toEqual([{ session_id: winner }]);
  }, 60_000);

  test('refusals change nothing: another wallet, another session paid by amount, unknown, unreadable, sandbox', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const count = async () => Number((await db.store.query<{ count: string }>('SELECT count(*) FROM transaction_claims')).rows[0]!.count);
    const before = await count();

    const elsewhere = await pay(newEvmWallet(), 9_990_000n);
    const wrongWallet = await prove(second.id, elsewhere);
    expect(wrongWallet.status).toBe(409);
    expect(wrongWallet.body.error).toMatch(new RegExp(`does not pay this session: it does not pay this session's wallet ${wallet}`));

    // Exactly the first session's due amount: matched to it by amount, so not the second's to claim.
    const exact = await pay(wallet, BigInt(first.amountDueBaseUnits));
    expect(await checked(exact)).toEqual({ session_id: first.id, match_method: 'amount' });
    const taken = await prove(second.id, exact);
    expect(taken).toEqual({ status: 409, body: { error: `transaction ${exact.toLowerCase()} already pays another payment session` } });

    const unknown = await prove(second.id, `0x${randomBytes(32).toString('hex')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/was not found on Polygon: it is not in a block yet.*Retry once it is mined/);
    expect((await prove(second.id, '0x1234')).status).toBe(400);
    expect((await prove(second.id, 'not a hash')).body.error).toMatch(/txHash is not a Polygon transaction hash/);
    expect((await prove('ses_00000000000000000000', `0x${'ab'.repeat(32)}`)).status).toBe(404);

    const sandbox = await newSession(newEvmWallet(), '5', 'test');
    const sandboxAnswer = await prove(sandbox.id, `0x${'ab'.repeat(32)}`);
    expect(sandboxAnswer.status).toBe(400);
    expect(sandboxAnswer.body.error).toMatch(/sandbox sessions are on no real chain: pay them with POST \/api\/v1\/sandbox\/sessions\/.*\/pay/);

    expect(await count()).toBe(before);
    expect(await statusOf(second.id)).toBe('created');
  }, 60_000);

  test('proofs are rate-limited per IP address with the public creation budget (10 a minute)', async () => {
    const { second } = await lookAlikes();
    for (let i = 0; i < 10; i++) expect((await prove(second.id, '0x12', { ip: '192.0.2.7' })).status).toBe(400);
    const refused = await prove(second.id, '0x12', { ip: '192.0.2.7' });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatch(/10 transaction proofs from one IP address per minute/);
    expect((await prove(second.id, '0x12', { ip: '192.0.2.8' })).status).toBe(400);
  });

  test("the checkout's JSON instructions name the proof URL (live sessions only)", async () => {
    const live = await newSession(newEvmWallet());
    const instructions = (await http('GET', `/checkout/${live.id}`)).body;
    expect(instructions.proofUrl).toBe(`${harness.api.url}/checkout/${live.id}/transactions`);
    expect(instructions.proofMessage).toBe(
      ['svc gateway: I sent this payment', `Gateway: ${harness.api.url}`, `Session: ${live.id}`, 'Chain: polygon', 'Transaction: {txHash}'].join('\n'),
    );
    const sandbox = await newSession(newEvmWallet(), '5', 'test');
    expect((await http('GET', `/checkout/${sandbox.id}`)).body).toMatchObject({ proofUrl: null, proofMessage: null });
  });
});

describe('the sender’s signature is the proof', () => {
  test('without a signature: 400 quoting the exact message to sign and the sender; nothing written', async () => {
    await startIngest();
    const { wallet, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    const sender = harness.payerOf(hash)!.address;
    const answer = await prove(second.id, hash, { signer: null });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toContain(`signature is required: an EIP-191 personal_sign signature by the transfer's sender ${sender} of exactly this message`);
    expect(answer.body.error).toContain(JSON.stringify(await harness.proofMessageOf(second.id, hash)));
    expect((await db.store.query('SELECT 1 FROM transaction_claims WHERE tx_hash = $1', [hash.toLowerCase()])).rowCount).toBe(0);
  });

  test('refused with 403, nothing written: another signer, a signature for another session, for another transaction, replayed from another proof', async () => {
    await startIngest();
    const { wallet, first, second } = await lookAlikes();
    const hash = await pay(wallet, 9_990_000n);
    const payer = harness.payerOf(hash)!;
    const claims = async () => (await db.store.query('SELECT 1 FROM transaction_claims WHERE tx_hash = $1', [hash.toLowerCase()])).rowCount;
    const expectRefused = async (answer: { status: number; body: { error: string } }) => {
      expect(answer.status).toBe(403);
      expect(answer.body.error).toMatch(new RegExp(`is not an EIP-191 personal_sign signature by the transfer's sender ${payer.address}`));
    };

    await expectRefused(await prove(second.id, hash, { signer: await harness.fundedPayer(1n) }));
    await expectRefused(await prove(second.id, hash, { message: await harness.proofMessageOf(first.id, hash) }));
    const otherHash = await pay(wallet, 1_000_000n, payer);
    await expectRefused(await prove(second.id, hash, { message: await harness.proofMessageOf(second.id, otherHash) }));
    await expectRefused(
      await prove(second.id, hash, { message: (await harness.proofMessageOf(second.id, hash)).replace(harness.api.url!, 'https://pay.example') }),
    );
    // A signature that proved a transaction for one session says nothing for another.
    const signature = await payer.signMessage({ message: await harness.proofMessageOf(first.id, hash) });
    expect([200, 202]).toContain((await http('POST', `/checkout/${first.id}/transactions`, { body: { txHash: hash, signature } })).status);
    await expectRefused(await http('POST', `/checkout/${second.id}/transactions`, { body: { txHash: hash, signature } }));
    const garbage = await http('POST', `/checkout/${second.id}/transactions`, { body: { txHash: hash, signature: '0xzz' } });
    expect(garbage.status).toBe(403);
    expect(await claims()).toBe(1);
    expect(await statusOf(second.id)).toBe('created');
  });
});

test('a smart-contract wallet proves its transfer with ERC-1271 (its owner signs); another key is refused', async () => {
  const { anvil } = harness;
  const owner = await harness.fundedPayer(1n);
  const contractWallet = newEvmWallet() as `0x${string}`;
  await anvil.client.setCode({ address: contractWallet, bytecode: testContractRuntime('ContractWallet.sol', 'ContractWallet') });
  await anvil.client.setStorageAt({ address: contractWallet, index: 0, value: pad(owner.address) });
  const { wallet, second } = await lookAlikes();
  await anvil.waitMined(await anvil.mint(USDC, contractWallet, 9_990_000n));
  const hash = await anvil.transfer(USDC, contractWallet, wallet as `0x${string}`, 9_990_000n);
  await anvil.waitMined(hash);

  const stranger = await prove(second.id, hash, { signer: await harness.fundedPayer(1n) });
  expect(stranger.status).toBe(403);
  expect(stranger.body.error).toContain(`by the transfer's sender ${contractWallet}`);
  const answer = await prove(second.id, hash, { signer: owner });
  expect([200, 202]).toContain(answer.status);
  expect(answer.body).toMatchObject({ sessionId: second.id, txHash: hash.toLowerCase() });
});
