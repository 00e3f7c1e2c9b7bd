import { expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { bindSettlementTransaction } from '../../src/x402/bind.ts';
import { insertTransfer, newEvmWallet, newMerchant, newSession } from '../helpers/engine.ts';

/**
 * x402's "paid by another" path (issue 24): a transaction someone else got mined with a payer's
 * authorization names no session, so it is bound by a payer's proof's rules. A copied
 * authorization offered for a prepared session never takes a transfer that is another open
 * session's exact due amount; the gateway's own relayer transaction is bound as before.
 */
const db = useTestDatabase('x402_bind');
const logger = pino({ level: 'silent' });
const chain = 'polygon' as const;

/** Two open sessions on one wallet asking exactly the same amount (as on an address two merchants use), and a transfer of it. */
async function twoAskingTheSame() {
  const wallet = newEvmWallet();
  const victim = await newSession(db.store, { merchantId: await newMerchant(db.store), wallet, amount: '4' });
  const prepared = await newSession(db.store, { merchantId: await newMerchant(db.store), wallet, amount: '4' });
  await db.store.query('UPDATE payment_sessions SET amount_due = $2 WHERE id = $1', [prepared.id, String(victim.amountDue)]);
  const { txHash } = await insertTransfer(db.store, { to: wallet, amount: victim.amountDue, block: 5_000n });
  return { victim, prepared, txHash };
}

const claimOf = async (txHash: string) => (await db.store.query('SELECT session_id, source FROM transaction_claims WHERE tx_hash = $1', [txHash])).rows;

test('a transaction submitted by another sender is refused for a prepared session when it is exactly another open session’s due amount', async () => {
  const { prepared, txHash } = await twoAskingTheSame();
  expect(await bindSettlementTransaction(db.store, logger, { sessionId: prepared.id, chain, txHash, submittedBy: 'another' })).toBe(false);
  expect(await claimOf(txHash)).toEqual([]);
  const { rows } = await db.store.query('SELECT session_id FROM transfers WHERE tx_hash = $1', [txHash]);
  expect(rows).toEqual([{ session_id: null }]);
});

test('the relayer’s own transaction, built for the session, is bound to it as before', async () => {
  const { prepared, txHash } = await twoAskingTheSame();
  expect(await bindSettlementTransaction(db.store, logger, { sessionId: prepared.id, chain, txHash })).toBe(true);
  expect(await claimOf(txHash)).toEqual([{ session_id: prepared.id, source: 'x402' }]);
});
