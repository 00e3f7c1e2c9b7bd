import { describe, expect, test } from 'vitest';
import { useProofDaemon } from '../helpers/proofDaemon.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { createApiKey } from '../../src/accounts/index.ts';

/**
 * The three ways a second review took another customer's transfer with a transaction-hash proof
 * (issue 24), replayed end to end on anvil against the daemon as deployed. Each took the
 * victim's money on the main of that day; here each is refused, the victim's session gets its
 * own transfer, and the merchant's backend never hears `payment.confirmed` for the attacker.
 */
const harness = useProofDaemon('checkout_proof_attacks', { toleranceBps: 0 });
const { http, prove, pay, statusOf, startIngest, checked, until, webhooksOf } = harness;

/** What a session has received, in base units, as the engine counts it (its observed transfers). */
const receivedOf = async (sessionId: string): Promise<bigint> =>
  BigInt(
    (
      await harness.db.store.query<{ sum: string }>(
        "SELECT coalesce(sum(amount), 0)::text AS sum FROM transfers WHERE session_id = $1 AND status = 'observed'",
        [sessionId],
      )
    ).rows[0]!.sum,
  );

let visits = 0;

/** An anonymous visitor's session from the merchant's public payment link (a live link paying `wallet`). */
async function fromPublicLink(wallet: string, amount: string): Promise<string> {
  // A key per link: the file creates more links than one key may in a minute.
  const key = (await createApiKey(harness.db.store, { merchantId: harness.api.bootstrap!.merchantId, livemode: true })).secret;
  const link = await http('POST', '/api/v1/payment-links', {
    key,
    body: { amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet },
  });
  expect(link.status).toBe(201);
  const visit = await fetch(`${harness.api.url}/pay/${link.body.id}`, { redirect: 'manual', headers: { 'x-forwarded-for': `198.51.100.${++visits}` } });
  expect(visit.status).toBe(303);
  return /\/checkout\/([^/?]+)/.exec(visit.headers.get('location')!)![1]!;
}

/** The attacker's stage: a 25 USDC link session paid 15 by the attacker and proved, so exactly 10.000000 is missing; a victim's 10 USDC order. */
async function topUpStage() {
  await startIngest();
  const wallet = newEvmWallet();
  const victim = await harness.newSession(wallet, '10');
  expect(victim.amountDueBaseUnits).toBe('10000000');
  const attackerSession = await fromPublicLink(wallet, '25');
  const attacker = await harness.fundedPayer(100_000_000n);
  const partial = await pay(wallet, 15_000_000n, attacker);
  expect([200, 202]).toContain((await prove(attackerSession, partial)).status);
  await until(async () => (await receivedOf(attackerSession)) === 15_000_000n, 'the attacker’s 15 counted');
  return { wallet, victim, attackerSession, attacker };
}

async function expectVictimPaid(victimId: string, attackerSession: string, hash: string) {
  expect(await checked(hash)).toEqual({ session_id: victimId, match_method: 'amount' });
  await until(async () => (await statusOf(victimId)) === 'confirming', 'the victim confirming');
  await harness.anvil.mine(32);
  await until(async () => (await statusOf(victimId)) === 'confirmed', 'the victim confirmed');
  await until(async () => (await webhooksOf(victimId)).includes('payment.confirmed'), 'the victim’s webhook');
  expect(await receivedOf(attackerSession)).toBe(15_000_000n);
  expect(await receivedOf(victimId)).toBe(10_000_000n);
  expect(await webhooksOf(attackerSession)).not.toContain('payment.confirmed');
}

describe('a transaction-hash proof never takes another customer’s transfer', () => {
  test('the top-up trick: proving the victim’s exact 10 USDC for a session missing exactly 10 is refused; the victim is paid', async () => {
    const { wallet, victim, attackerSession, attacker } = await topUpStage();
    const victimPays = await pay(wallet, 10_000_000n);
    // The attacker holds no key of the victim's: its own signature is refused (403)…
    const signed = await prove(attackerSession, victimPays, { signer: attacker });
    expect(signed.status).toBe(403);
    // …and with no signature at all it is a 400 naming the victim's address as the one to sign.
    expect((await prove(attackerSession, victimPays, { signer: null })).status).toBe(400);
    await expectVictimPaid(victim.id, attackerSession, victimPays);
  }, 90_000);

  test('even from the attacker’s own wallet, a transfer that is exactly another open session’s due amount is never taken by a proof', async () => {
    const { wallet, victim, attackerSession, attacker } = await topUpStage();
    // The attacker sends exactly the victim's due amount itself and proves it at once, before
    // the ingester stores it: refused now (409), not claimed to be decided later.
    const own = await pay(wallet, 10_000_000n, attacker);
    const answer = await prove(attackerSession, own);
    expect(answer).toMatchObject({ status: 409, body: { error: expect.stringMatching(/its amount pays another payment session/) } });
    await expectVictimPaid(victim.id, attackerSession, own);
  }, 90_000);

  test('the race with the ingester running: proving the instant the receipt exists wins none of 5 rounds', async () => {
    await startIngest();
    for (let round = 0; round < 5; round++) {
      const { wallet, victim, attackerSession, attacker } = await topUpStage();
      const victimPays = await pay(wallet, 10_000_000n);
      const [stolen, own] = await Promise.all([
        prove(attackerSession, victimPays, { signer: attacker }),
        pay(wallet, 10_000_000n, attacker).then((hash) => prove(attackerSession, hash)),
      ]);
      expect(stolen.status).toBe(403);
      expect([409]).toContain(own.status);
      expect(await checked(victimPays)).toEqual({ session_id: victim.id, match_method: 'amount' });
      expect(await receivedOf(attackerSession)).toBe(15_000_000n);
    }
  }, 180_000);

  test('any unmatched transfer, any size: the merchant’s own 1,000 USDC cannot be proved for a 1 USDC link session', async () => {
    await startIngest();
    const wallet = newEvmWallet();
    // Two open sessions, so amount matching leaves a 1,000 USDC transfer unmatched.
    await harness.newSession(wallet, '3');
    const small = await fromPublicLink(wallet, '1');
    const merchantMoves = await pay(wallet, 1_000_000_000n);
    expect(await checked(merchantMoves)).toEqual({ session_id: null, match_method: null });
    const attacker = await harness.fundedPayer(1n);
    expect((await prove(small, merchantMoves, { signer: attacker })).status).toBe(403);
    // Not even the sender can turn it into a 1 USDC session's payment: a proof binds no more than is owed.
    const bySender = await prove(small, merchantMoves);
    expect(bySender).toMatchObject({ status: 409, body: { error: expect.stringMatching(/more than this session still owes \(1000000\)/) } });
    expect(await checked(merchantMoves)).toEqual({ session_id: null, match_method: null });
    expect(await statusOf(small)).toBe('created');
    expect(await receivedOf(small)).toBe(0n);
    expect(await webhooksOf(small)).toEqual([]);
  }, 90_000);
});
