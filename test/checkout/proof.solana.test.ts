import { afterAll, beforeAll, expect, test } from 'vitest';
import { getBase58Decoder, signBytes, type KeyPairSigner } from '@solana/kit';
import { randomBytes } from 'node:crypto';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createClient } from '../helpers/api.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../helpers/solanaRpc.ts';
import { createSolanaMerchant, startIngesterWithEngine, transfersOf, waitFor } from '../helpers/solanaIngest.ts';
import { createSession } from '../../src/payments/sessions.ts';

/**
 * Proofs on solana: the api looks a signature up with getTransaction on the test RPC (litesvm
 * with the real SPL token program and mainnet mints), parses it with the ingester's parser, and
 * claims it; the real ingester and engine then bind the credit to the claiming session.
 */
const db = useTestDatabase('checkout_proof_solana');
let rpc: SolanaTestRpc;
let app: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createClient>;
let merchantId: string;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  rpc = await startSolanaRpc();
  ({ merchantId, wallet: merchant } = await createSolanaMerchant(db.store, rpc));
  await db.store.query('UPDATE merchants SET payment_tolerance_bps = 100 WHERE id = $1', [merchantId]);
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 1_000_000_000n);
  rpc.ledger.finalize();
  app = buildApi(db.store, { env: { SVC_SOLANA_RPC_URL: rpc.url } });
  await app.ready();
  call = createClient(app);
});

afterAll(async () => {
  await stop?.();
  await app?.close();
  await rpc?.stop();
});

const newSession = (amount: string) =>
  db.store.transaction((sql) => createSession(sql, { merchantId, livemode: true, amount, currency: 'USDC', chain: 'solana', monitorWindowSeconds: 3600 }));
const statusOf = async (id: string) => (await db.store.query<{ status: string }>('SELECT status FROM payment_sessions WHERE id = $1', [id])).rows[0]!.status;
/** Proves `txHash` for a session with `signer`'s ed25519 signature (base58) of the session's proof message (default: the payer's). */
async function prove(sessionId: string, txHash: string, signer: KeyPairSigner = payer) {
  const template = (await call('GET', `/checkout/${sessionId}`, { headers: { accept: 'application/json' } })).body?.proofMessage as string | undefined;
  const body: Record<string, string> = { txHash };
  if (template) {
    const signature = await signBytes(signer.keyPair.privateKey, new TextEncoder().encode(template.replace('{txHash}', txHash)));
    body.signature = getBase58Decoder().decode(signature);
  }
  return call('POST', `/checkout/${sessionId}/transactions`, { body });
}

test('a credit no amount could attribute, proved by its signature before the ingester ran: 202, then the ingester binds it to the claiming session', async () => {
  const first = await newSession('5');
  const second = await newSession('5');
  // 4.99 is within 1% of both: amount matching leaves it for the merchant.
  const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 4_990_000n });

  const answer = await prove(second.id, paid.signature);
  expect(answer.status).toBe(202);
  expect(answer.body).toMatchObject({ object: 'transaction_proof', sessionId: second.id, chain: 'solana', txHash: paid.signature, bound: false });

  ({ stop } = await startIngesterWithEngine({ store: db.store, rpc }));
  const [credit] = await waitFor(async () => {
    const rows = await transfersOf(db.store, paid.signature);
    return rows[0]?.session_id ? rows : undefined;
  }, 'the credit bound');
  expect(credit).toMatchObject({ session_id: second.id, match_method: 'claim', amount: '4990000' });
  await waitFor(async () => (await statusOf(second.id)) === 'confirming', 'confirming');
  expect(await statusOf(first.id)).toBe('created');

  // Stored now: proving it again answers 200 at once; for the other session 409.
  expect((await prove(second.id, paid.signature)).body).toMatchObject({ bound: true, payment: { view: 'detected' } });
  expect((await prove(first.id, paid.signature)).status).toBe(409);
});

test("only the credit's source owner can prove it: another key's signature is refused (403), nothing written", async () => {
  const session = await newSession('6');
  await newSession('6');
  const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 5_990_000n });
  const stranger = await rpc.wallet();
  const refused = await prove(session.id, paid.signature, stranger);
  expect(refused.status).toBe(403);
  expect(refused.body.error).toMatch(new RegExp(`is not an ed25519 signature \\(signMessage\\), base58 or base64 by the transfer's sender ${payer.address}`));
  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM transaction_claims WHERE session_id = $1', [session.id]);
  expect(rows[0]!.n).toBe(0);
  expect([200, 202]).toContain((await prove(session.id, paid.signature)).status);
});

test('refusals: a credit to another wallet (409), an unknown signature (404), an unreadable one (400); nothing is written', async () => {
  const session = await newSession('7');
  const stranger = await rpc.wallet();
  const elsewhere = await rpc.pay({ from: payer, to: stranger.address, currency: 'USDC', amount: 7_000_000n });
  const wrong = await prove(session.id, elsewhere.signature);
  expect(wrong.status).toBe(409);
  expect(wrong.body.error).toMatch(new RegExp(`does not pay this session's wallet ${merchant.address}`));

  const unknown = await prove(session.id, getBase58Decoder().decode(randomBytes(64)));
  expect(unknown.status).toBe(404);
  expect(unknown.body.error).toMatch(/was not found on Solana/);
  const unreadable = await prove(session.id, `0x${'ab'.repeat(32)}`);
  expect(unreadable).toMatchObject({ status: 400, body: { error: expect.stringMatching(/txHash is not a Solana transaction signature/) } });

  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM transaction_claims WHERE session_id = $1', [session.id]);
  expect(rows[0]!.n).toBe(0);
});
