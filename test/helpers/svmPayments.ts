import { generateKeyPairSync } from 'node:crypto';
import {
  AccountRole,
  appendTransactionMessageInstructions,
  createNoopSigner,
  createTransactionMessage,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit';
import { getCreateAssociatedTokenIdempotentInstruction, getTransferCheckedInstruction } from '@solana-program/token';
import type { SolanaTestRpc } from './solanaRpc.ts';

/**
 * Hand-built x402 SVM payments for refusal tests: what a hostile payer could put in the
 * transaction that @x402/svm's client would never build, partially signed like the client's.
 */

/** A fresh Solana keypair as `SVC_SOLANA_RELAYER_KEY` takes it (base58 of seed and public key) and its address. */
export function newSolanaKeypair(): { base58: string; address: Address } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' }) as { d: string; x: string };
  const bytes = new Uint8Array([...Buffer.from(jwk.d, 'base64url'), ...Buffer.from(jwk.x, 'base64url')]);
  const base58 = getBase58Decoder();
  return { base58: base58.decode(bytes), address: base58.decode(bytes.subarray(32)) as Address };
}

const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111' as Address;
const MEMO = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address;

export function computeUnitLimit(units: number): Instruction {
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: COMPUTE_BUDGET, accounts: [], data };
}

export function computeUnitPrice(microLamports: bigint): Instruction {
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, microLamports, true);
  return { programAddress: COMPUTE_BUDGET, accounts: [], data };
}

/** A memo, optionally with `signer` as a signer account (how a hostile payer adds itself as a second signer). */
export function memo(text: string, signer?: KeyPairSigner): Instruction {
  return {
    programAddress: MEMO,
    accounts: signer ? [{ address: signer.address, role: AccountRole.READONLY_SIGNER, signer } as never] : [],
    data: new TextEncoder().encode(text),
  };
}

/** A System transfer of `lamports` from `from` (a signer of the message: here, the fee payer). */
export function systemTransfer(from: Address, to: Address, lamports: bigint): Instruction {
  const data = new Uint8Array(12);
  data[0] = 2;
  new DataView(data.buffer).setBigUint64(4, lamports, true);
  return {
    programAddress: '11111111111111111111111111111111' as Address,
    accounts: [{ address: from, role: AccountRole.WRITABLE_SIGNER, signer: createNoopSigner(from) } as never, { address: to, role: AccountRole.WRITABLE }],
    data,
  };
}

/** The payment a client would build: limit, price, TransferChecked of `amount` from the payer's to `to`'s token account, a memo. */
export async function standardInstructions(
  rpc: SolanaTestRpc,
  params: { payer: KeyPairSigner; to: Address; amount: bigint; currency?: 'USDC' | 'USDT'; price?: bigint },
): Promise<Instruction[]> {
  const currency = params.currency ?? 'USDC';
  return [
    computeUnitLimit(20_000),
    computeUnitPrice(params.price ?? 1n),
    getTransferCheckedInstruction({
      source: await rpc.ata(params.payer.address, currency),
      mint: rpc.mints[currency],
      destination: await rpc.ata(params.to, currency),
      authority: params.payer,
      amount: params.amount,
      decimals: 6,
    }),
    memo(Math.random().toString(16).slice(2).padEnd(32, '0')),
  ];
}

/** A CreateIdempotent of `owner`'s USDC account with `funder` (a signer of the message, maybe the fee payer) paying the rent. */
export async function createTokenAccount(rpc: SolanaTestRpc, params: { funder: Address; owner: Address }): Promise<Instruction> {
  return getCreateAssociatedTokenIdempotentInstruction({
    payer: createNoopSigner(params.funder),
    ata: await rpc.ata(params.owner, 'USDC'),
    owner: params.owner,
    mint: rpc.mints.USDC,
  });
}

/** Partially signs `instructions` with their signers, fee payer `feePayer` (unsigned), at the chain's latest blockhash: the payload's base64. */
export async function partiallySigned(rpc: SolanaTestRpc, feePayer: Address, instructions: Instruction[]): Promise<string> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: rpc.ledger.svm.latestBlockhash() as Blockhash, lastValidBlockHeight: 0n }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message));
}

/** The `PAYMENT-SIGNATURE` header of a v2 SVM payment of `transaction` for the requirements `accepted`. */
export function svmPaymentHeader(resourceUrl: string, accepted: unknown, transaction: string): Record<string, string> {
  const body = { x402Version: 2, resource: { url: resourceUrl, description: '', mimeType: 'application/json' }, accepted, payload: { transaction } };
  return { 'payment-signature': Buffer.from(JSON.stringify(body)).toString('base64') };
}
