import { afterAll, beforeAll, expect, test } from 'vitest';
import { createNoopSigner, type Address, type Instruction, type KeyPairSigner } from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { decodePaymentResponseHeader } from '@x402/fetch';
import { useTestDatabase } from '../helpers/db.ts';
import type { SolanaTestRpc } from '../helpers/solanaRpc.ts';
import { createSolanaMerchant } from '../helpers/solanaIngest.ts';
import {
  computeUnitLimit,
  computeUnitPrice,
  createTokenAccount,
  memo,
  partiallySigned,
  standardInstructions,
  svmPaymentHeader,
  systemTransfer,
} from '../helpers/svmPayments.ts';
import { startSvmX402Stack } from '../helpers/svmX402Stack.ts';
import { createSession } from '../../src/payments/sessions.ts';

/**
 * What a hostile payer can put in an x402 Solana transaction, and what the gateway does with it
 * (docs/security.md, "x402 on Solana"): each is a 402 naming the reason, nothing written, nothing
 * sent, not a lamport of the fee payer spent. And the one account creation the fee payer pays:
 * the merchant's own token account.
 */
const db = useTestDatabase('x402_svm_refusals');
let stack: Awaited<ReturnType<typeof startSvmX402Stack>>;
let feePayer: Address;
let rpc: SolanaTestRpc;
let baseUrl: string;
let merchantId: string;
let wallet: KeyPairSigner;
let payer: KeyPairSigner;
let attacker: KeyPairSigner;

beforeAll(async () => {
  stack = await startSvmX402Stack({
    db,
    merchantName: 'Solana shop',
    prepare: async ({ rpc, wallet, payer, feePayer }) => {
      attacker = await rpc.wallet();
      await rpc.fund(payer.address, 'USDT', 100_000_000n);
      await rpc.fund(wallet.address, 'USDT', 0n);
      await rpc.fund(attacker.address, 'USDC', 0n);
      // The fee payer's own USDC, which a transaction must never move.
      await rpc.fund(feePayer, 'USDC', 50_000_000n);
    },
  });
  ({ rpc, baseUrl, wallet, payer } = stack);
  feePayer = stack.feePayerKey.address;
  merchantId = stack.merchant.id;
});

afterAll(async () => {
  await stack?.close();
});

async function newSession(merchant = merchantId) {
  const session = await db.store.transaction((sql) =>
    createSession(sql, { merchantId: merchant, livemode: true, amount: '0.5', currency: 'USDC', chain: 'solana', monitorWindowSeconds: 3600 }),
  );
  const url = `${baseUrl}/checkout/${session.id}/x402`;
  const challenge = await fetch(url);
  expect(challenge.status).toBe(402);
  const accepted = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()).accepts[0];
  return { id: session.id, url, accepted, due: BigInt(accepted.amount) };
}

const settlements = () => stack.settlements();
const usdc = (owner: Address) => stack.usdc(owner);

/** Sends `instructions` (partially signed, the gateway as fee payer) to a fresh session and expects a 402 with `reason`; nothing moved or signed. */
async function refused(reason: string, build: (session: { due: bigint }) => Promise<Instruction[]>) {
  const session = await newSession();
  const before = {
    rows: await settlements(),
    entries: rpc.ledger.entries.length,
    sol: rpc.ledger.svm.getBalance(feePayer),
    usdc: await usdc(feePayer),
    signed: stack.signedMessages.length,
  };
  const transaction = await partiallySigned(rpc, feePayer, await build(session));
  const answer = await fetch(session.url, { headers: svmPaymentHeader(session.url, session.accepted, transaction) });
  expect(answer.status).toBe(402);
  const body = (await answer.json()) as { reason: string; error: string };
  expect(body.reason).toBe(reason);
  expect(body.error).toContain(reason);
  expect(await settlements()).toBe(before.rows);
  expect(rpc.ledger.entries.length).toBe(before.entries);
  expect(rpc.ledger.svm.getBalance(feePayer)).toBe(before.sol);
  expect(await usdc(feePayer)).toBe(before.usdc);
  // Not even signed in memory: the fee payer's key signs only what inspect.ts passed.
  expect(stack.signedMessages.length, 'messages the fee payer signed').toBe(before.signed);
  return body;
}

const standard = (to: Address, amount: bigint, extra: Partial<Parameters<typeof standardInstructions>[1]> = {}) =>
  standardInstructions(rpc, { payer, to, amount, ...extra });

test('the wrong mint (USDT for a USDC session) is refused', async () => {
  await refused('invalid_exact_svm_payload_mint_mismatch', ({ due }) => standard(wallet.address, due, { currency: 'USDT' }));
});

test('another amount, one base unit less or more, is refused', async () => {
  await refused('invalid_exact_svm_payload_amount_mismatch', ({ due }) => standard(wallet.address, due - 1n));
  await refused('invalid_exact_svm_payload_amount_mismatch', ({ due }) => standard(wallet.address, due + 1n));
});

test("a transfer into another token account than the merchant's is refused", async () => {
  await refused('invalid_exact_svm_payload_recipient_mismatch', ({ due }) => standard(attacker.address, due));
});

test("the fee payer as the transfer's authority (its own USDC as source) is refused, whoever else signs", async () => {
  await refused('invalid_exact_svm_payload_transaction_fee_payer_transferring_funds', async ({ due }) => [
    computeUnitLimit(20_000),
    computeUnitPrice(1n),
    getTransferCheckedInstruction({
      source: await rpc.ata(feePayer, 'USDC'),
      mint: rpc.mints.USDC,
      destination: await rpc.ata(wallet.address, 'USDC'),
      authority: createNoopSigner(feePayer),
      amount: due,
      decimals: 6,
    }),
    memo('the payer signs here to be the second signer', payer),
  ]);
});

test("an extra instruction (a System transfer of the fee payer's SOL after the payment) is refused", async () => {
  await refused('invalid_exact_svm_payload_unknown_optional_instruction', async ({ due }) => {
    const [limit, price, transfer] = await standard(wallet.address, due);
    return [limit!, price!, transfer!, systemTransfer(feePayer, attacker.address, 500_000_000n)];
  });
  // Even in place of the memo, and with the fee payer in a memo's accounts.
  await refused('invalid_exact_svm_payload_unknown_optional_instruction', async ({ due }) => {
    const [limit, price, transfer] = await standard(wallet.address, due);
    return [limit!, price!, transfer!, memo('x', payer), memo('y')];
  });
});

test("rent for any account but the merchant's token account is refused (an attacker's token account funded by the fee payer)", async () => {
  const fresh = await rpc.wallet();
  await refused('invalid_exact_svm_payload_foreign_account_creation', async ({ due }) => {
    const [limit, price, transfer, note] = await standard(wallet.address, due);
    return [limit!, price!, await createTokenAccount(rpc, { funder: feePayer, owner: fresh.address }), transfer!, note!];
  });
  expect(rpc.ledger.svm.getAccount(await rpc.ata(fresh.address, 'USDC')).exists).toBe(false);
});

test('a compute unit price or limit above the caps is refused', async () => {
  await refused('invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high', ({ due }) =>
    standard(wallet.address, due, { price: 1_000_001n }),
  );
  await refused('invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high', async ({ due }) => {
    const [, price, transfer, note] = await standard(wallet.address, due);
    return [computeUnitLimit(1_400_000), price!, transfer!, note!];
  });
});

test('a transaction the payer did not sign, or with the fee payer not first, is refused', async () => {
  await refused('invalid_exact_svm_payload_signature_invalid', async ({ due }) => {
    const [limit, price, , note] = await standard(wallet.address, due);
    const transfer = getTransferCheckedInstruction({
      source: await rpc.ata(payer.address, 'USDC'),
      mint: rpc.mints.USDC,
      destination: await rpc.ata(wallet.address, 'USDC'),
      authority: createNoopSigner(payer.address),
      amount: due,
      decimals: 6,
    });
    return [limit!, price!, transfer, note!];
  });
});

test("the fee payer funds the merchant's own token account when it does not exist yet: paid, with its rent", async () => {
  const { merchantId: fresh, wallet: freshWallet } = await createSolanaMerchant(db.store, rpc);
  const session = await newSession(fresh);
  const sol = rpc.ledger.svm.getBalance(feePayer)!;
  const [, price, transfer, note] = await standard(freshWallet.address, session.due);
  const creation = await createTokenAccount(rpc, { funder: feePayer, owner: freshWallet.address });
  // Creating the account takes more units than a transfer alone (20,000 runs out).
  const transaction = await partiallySigned(rpc, feePayer, [computeUnitLimit(50_000), price!, creation, transfer!, note!]);
  const answer = await fetch(session.url, { headers: svmPaymentHeader(session.url, session.accepted, transaction) });
  expect(answer.status, JSON.stringify(await answer.clone().json())).toBe(200);
  expect(decodePaymentResponseHeader(answer.headers.get('payment-response')!)).toMatchObject({ success: true, payer: payer.address });
  expect(await usdc(freshWallet.address)).toBe(session.due);
  const rent = rpc.ledger.svm.minimumBalanceForRentExemption(165n);
  const spent = sol - rpc.ledger.svm.getBalance(feePayer)!;
  expect(spent - rent).toBeGreaterThanOrEqual(10_000n);
  expect(spent - rent).toBeLessThan(11_000n);
});
