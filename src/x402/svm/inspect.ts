import {
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getPublicKeyFromAddress,
  getTransactionDecoder,
  verifySignature,
  type Address,
  type SignatureBytes,
  type Transaction,
} from '@solana/kit';
import { ASSOCIATED_TOKEN_PROGRAM, associatedTokenAddress } from '../../ingest/solana/accounts.ts';
import type { Refusal } from '../authorization.ts';
import type { SvmOffer, SvmRequirements } from './offer.ts';
import { SVM_REASONS as R } from './reasons.ts';

/**
 * The strict check of a payer's partially signed transaction before the fee payer signs anything
 * (scheme_exact_svm.md, "Facilitator Verification Rules", and stricter; docs/security.md, "x402
 * on Solana"). The instructions must be exactly, in this order:
 *
 *   0. ComputeBudget SetComputeUnitLimit, at most {@link MAX_COMPUTE_UNIT_LIMIT} units
 *   1. ComputeBudget SetComputeUnitPrice, at most {@link MAX_COMPUTE_UNIT_PRICE} micro-lamports
 *   2. optionally: Associated Token CreateIdempotent of the merchant's token account, nothing else
 *   3. the token program's TransferChecked: the session's mint, exactly the due amount, into the
 *      associated token account of (the session's wallet, the mint), signed by the payer
 *   4. optionally: one Memo with no accounts (@x402/svm always adds a random one: it makes two
 *      payments of the same amount two different transactions)
 *
 * Two signers: the fee payer first (this gateway's key), the transfer's authority second, whose
 * signature must already be valid. The fee payer is in no instruction's accounts, so it can be
 * made to sign for nothing but the fee, with one exception: it may fund the merchant's token
 * account in (2). No other account creation is paid: a study of mainnet x402 traffic found
 * facilitator-paid rent for payer-chosen accounts abused tens of thousands of times (a payer
 * opens accounts it later closes and pockets the rent). No address lookup tables: every account
 * the check reads is in the message itself.
 */

/**
 * Units a payment may reserve. TransferChecked takes about 6,000, CreateIdempotent about 25,000
 * when it creates the account, the memo and budget instructions a few thousand; @x402/svm asks
 * for 20,000. 60,000 leaves a wallet room without letting a payer buy block space with our fee.
 */
export const MAX_COMPUTE_UNIT_LIMIT = 60_000;
/**
 * Priority fee cap in micro-lamports per unit: 1 lamport per unit, a fifth of the spec's cap (5),
 * so a payment costs the fee payer at most 60,000 lamports of priority fee on top of the base
 * fee (0.00007 SOL in all). @x402/svm asks for 1 micro-lamport.
 */
export const MAX_COMPUTE_UNIT_PRICE = 1_000_000n;
/** The spec's memo limit. */
const MAX_MEMO_BYTES = 256;

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const TRANSFER_CHECKED = 12;
const CREATE_IDEMPOTENT = 1;

/** A transaction that passed every local check: what settling it needs. */
export interface InspectedTransaction {
  transaction: Transaction;
  /** The transfer's authority: the payer. */
  payer: string;
  /** Whether it creates the merchant's token account, and whether the fee payer funds that rent. */
  createsDestination: boolean;
  feePayerFundsRent: boolean;
}

interface CompiledInstruction {
  programAddressIndex: number;
  accountIndices?: readonly number[];
  data?: Readonly<Uint8Array>;
}

const refuse = (reason: string, message: string): { refusal: Refusal } => ({ refusal: { reason, message } });

function decode(base64: string): Transaction | undefined {
  try {
    return getTransactionDecoder().decode(new Uint8Array(getBase64Encoder().encode(base64)));
  } catch {
    return undefined;
  }
}

/**
 * The transaction and its payer when `base64` is a transaction this fee payer would co-sign as
 * first signer, signed by its second signer (the payer), whatever it pays: its settlement is
 * looked up by that payer and the message's hash, so a retry whose amount no longer fits the
 * session (its money already arrived) still finds the settlement it is a retry of. Nothing here
 * makes it fit to be signed by the fee payer (inspectTransaction decides that).
 */
export async function signedByPayer(base64: string, feePayer: string): Promise<{ transaction: Transaction; payer: string } | undefined> {
  const transaction = decode(base64);
  if (!transaction) return undefined;
  let keys: string[];
  try {
    keys = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes).staticAccounts.map(String);
  } catch {
    return undefined;
  }
  const payer = keys[1];
  if (keys[0] !== feePayer || !payer || payer === feePayer) return undefined;
  const signature = transaction.signatures[payer as Address];
  if (!signature || !(await verifySignature(await getPublicKeyFromAddress(payer as Address), signature as SignatureBytes, transaction.messageBytes)))
    return undefined;
  return { transaction, payer };
}

const u32 = (data: Readonly<Uint8Array>, at: number) => new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(at, true);
const u64 = (data: Readonly<Uint8Array>, at: number) => new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(at, true);

/**
 * Checks the payer's transaction of a payment against `requirements` (`feePayer` is this
 * gateway's key). Local only: the chain's part (balances, the blockhash) is the simulation's.
 */
export async function inspectTransaction(
  base64: string,
  params: { offer: SvmOffer; requirements: SvmRequirements; feePayer: string },
): Promise<InspectedTransaction | { refusal: Refusal }> {
  const { offer, requirements, feePayer } = params;
  const transaction = decode(base64);
  if (!transaction) return refuse(R.undecodable, 'payload.transaction is not a Solana transaction');
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch {
    return refuse(R.undecodable, "the transaction's message cannot be decoded");
  }
  if (message.version !== 'legacy' && message.version !== 0)
    return refuse(R.undecodable, `transaction version ${message.version} is not accepted: legacy or v0`);
  const lookups = 'addressTableLookups' in message ? (message.addressTableLookups ?? []) : [];
  if (lookups.length > 0) return refuse(R.lookupTables, 'address lookup tables are not accepted: name every account in the message');
  const keys = message.staticAccounts.map(String);
  if (keys[0] !== feePayer) return refuse(R.feePayerMismatch, `the fee payer must be ${feePayer} (extra.feePayer), first in the message`);
  const { numSignerAccounts, numReadonlySignerAccounts } = message.header;
  if (numSignerAccounts !== 2 || numReadonlySignerAccounts > 1)
    return refuse(R.signers, 'exactly two signers: the fee payer (writable, first) and the payer, the transfer authority');
  const payer = keys[1]!;
  if (payer === feePayer) return refuse(R.feePayerTransferring, 'the fee payer cannot be the payer');
  const payerSignature = transaction.signatures[payer as Address];
  if (!payerSignature || !(await verifySignature(await getPublicKeyFromAddress(payer as Address), payerSignature as SignatureBytes, transaction.messageBytes)))
    return refuse(R.signature, `the transaction is not signed by ${payer}`);

  const instructions = message.instructions as readonly CompiledInstruction[];
  const programOf = (ix: CompiledInstruction) => keys[ix.programAddressIndex];
  const accountsOf = (ix: CompiledInstruction) => (ix.accountIndices ?? []).map((index) => keys[index]);
  const dataOf = (ix: CompiledInstruction) => ix.data ?? new Uint8Array();
  if (instructions.length < 3 || instructions.length > 5)
    return refuse(R.layout, 'expected: compute unit limit, compute unit price, [create the merchant token account,] TransferChecked, [memo]');

  const [limit, price] = instructions as [CompiledInstruction, CompiledInstruction];
  if (programOf(limit) !== COMPUTE_BUDGET_PROGRAM || dataOf(limit).length !== 5 || dataOf(limit)[0] !== 2 || accountsOf(limit).length > 0)
    return refuse(R.computeLimit, 'the first instruction must be ComputeBudget SetComputeUnitLimit');
  if (u32(dataOf(limit), 1) > MAX_COMPUTE_UNIT_LIMIT)
    return refuse(R.computeLimitTooHigh, `the compute unit limit is ${u32(dataOf(limit), 1)}; at most ${MAX_COMPUTE_UNIT_LIMIT}`);
  if (programOf(price) !== COMPUTE_BUDGET_PROGRAM || dataOf(price).length !== 9 || dataOf(price)[0] !== 3 || accountsOf(price).length > 0)
    return refuse(R.computePrice, 'the second instruction must be ComputeBudget SetComputeUnitPrice');
  if (u64(dataOf(price), 1) > MAX_COMPUTE_UNIT_PRICE)
    return refuse(R.computePriceTooHigh, `the compute unit price is ${u64(dataOf(price), 1)} micro-lamports; at most ${MAX_COMPUTE_UNIT_PRICE}`);

  const destination = await associatedTokenAddress(requirements.payTo, { mint: offer.asset, tokenProgram: offer.token.tokenProgram });
  let next = 2;
  let create: CompiledInstruction | undefined;
  if (programOf(instructions[next]!) === ASSOCIATED_TOKEN_PROGRAM) create = instructions[next++];
  const transfer = instructions[next++];
  const rest = instructions.slice(next);

  if (!transfer || programOf(transfer) !== offer.token.tokenProgram || dataOf(transfer)[0] !== TRANSFER_CHECKED || dataOf(transfer).length !== 10)
    return refuse(R.noTransfer, `expected a TransferChecked of the token program ${offer.token.tokenProgram} after the compute budget`);
  const transferAccounts = accountsOf(transfer);
  if (transferAccounts.length !== 4) return refuse(R.noTransfer, 'TransferChecked must have exactly its four accounts (source, mint, destination, authority)');
  const [source, mint, to, authority] = transferAccounts as [string, string, string, string];
  if (source === feePayer || authority === feePayer)
    return refuse(R.feePayerTransferring, 'the fee payer cannot be the source or the authority of the transfer');
  if (authority !== payer) return refuse(R.signature, 'the transfer authority must be the second signer');
  if (mint !== offer.asset) return refuse(R.mint, `the transfer is of mint ${mint}; this session is paid in ${offer.asset}`);
  if (dataOf(transfer)[9] !== offer.token.decimals)
    return refuse(R.mint, `TransferChecked names ${dataOf(transfer)[9]} decimals; the mint has ${offer.token.decimals}`);
  if (to !== destination)
    return refuse(R.recipient, `the transfer credits ${to}; this session is paid to ${destination}, the token account of ${requirements.payTo}`);
  const amount = u64(dataOf(transfer), 1);
  if (amount !== BigInt(requirements.amount))
    return refuse(R.amount, `the transfer is of ${amount} base units; this session asks for exactly ${requirements.amount}`);

  let feePayerFundsRent = false;
  if (create) {
    const accounts = accountsOf(create);
    const [funder, account, wallet, createMint, system, tokenProgram] = accounts;
    const data = dataOf(create);
    if (data.length !== 1 || data[0] !== CREATE_IDEMPOTENT || accounts.length !== 6)
      return refuse(R.foreignAccountCreation, 'the only account creation accepted is CreateIdempotent of the merchant token account');
    if (
      account !== destination ||
      wallet !== requirements.payTo ||
      createMint !== offer.asset ||
      system !== SYSTEM_PROGRAM ||
      tokenProgram !== offer.token.tokenProgram
    )
      return refuse(
        R.foreignAccountCreation,
        `the transaction creates ${account} owned by ${wallet}: the fee payer pays rent for the merchant's token account ${destination} only`,
      );
    if (funder !== feePayer && funder !== payer) return refuse(R.foreignAccountCreation, 'the token account must be funded by the fee payer or the payer');
    feePayerFundsRent = funder === feePayer;
  }
  if (rest.length > 1) return refuse(R.unknownInstruction, 'at most one instruction after the transfer: a memo');
  for (const ix of rest) {
    if (programOf(ix) !== MEMO_PROGRAM) return refuse(R.unknownInstruction, `instruction ${next} runs ${programOf(ix)}; only a memo may follow the transfer`);
    if (accountsOf(ix).length > 0 || dataOf(ix).length > MAX_MEMO_BYTES)
      return refuse(R.unknownInstruction, 'the memo must have no accounts and at most 256 bytes');
  }
  // The fee payer in no instruction's accounts (it would sign or pay for it), but as the funder of the merchant's token account.
  for (const ix of instructions) {
    const accounts = accountsOf(ix);
    const allowed = ix === create && feePayerFundsRent ? 1 : 0;
    if (accounts.slice(allowed).includes(feePayer)) return refuse(R.feePayerInInstruction, "the fee payer appears in an instruction's accounts");
  }
  return { transaction, payer, createsDestination: create !== undefined, feePayerFundsRent };
}
