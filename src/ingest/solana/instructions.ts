import { getBase58Decoder, getBase58Encoder } from '@solana/kit';
import type { RpcInstruction, RpcTransaction } from './rpcTransaction.ts';
import { ASSOCIATED_TOKEN_PROGRAM } from './accounts.ts';

/** SPL token instruction tags (the first data byte) that move tokens between accounts. */
const TRANSFER = 3;
const TRANSFER_CHECKED = 12;
/** Accounts a Transfer takes (source, destination, authority); TransferChecked adds the mint. */
const STANDARD_ACCOUNTS = { [TRANSFER]: 3, [TRANSFER_CHECKED]: 4 } as const;
/** SPL token instructions that initialise a token account: InitializeAccount (account, mint, owner), 2 and 3 (account, mint; owner in the data). */
const INITIALIZE_ACCOUNT = 1;
const INITIALIZE_ACCOUNT_2 = 16;
const INITIALIZE_ACCOUNT_3 = 18;

/**
 * Programs that are never a Solana Pay reference (sysvars are recognised by their `Sysvar`
 * prefix). Only tidiness: a key is a false reference only if it equals some session's reference.
 */
export const WELL_KNOWN = new Set([
  '11111111111111111111111111111111',
  'ComputeBudget111111111111111111111111111111',
  ASSOCIATED_TOKEN_PROGRAM,
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
  'AddressLookupTab1e1111111111111111111111111',
  'Vote111111111111111111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'Config1111111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'NativeLoader1111111111111111111111111111111',
  'Ed25519SigVerify111111111111111111111111111',
  'KeccakSecp256k11111111111111111111111111111',
  'Secp256r1SigVerify1111111111111111111111111',
]);

const base58 = getBase58Encoder();
const base58Text = getBase58Decoder();

export interface TransferInstruction {
  source: number;
  destination: number;
  /** TransferChecked's mint account (undefined for Transfer). */
  mint: number | undefined;
  amount: bigint;
  references: number[];
  /** Every account index the instruction names. */
  accounts: number[];
}

/** A token account some instruction of the transaction creates or initialises: its mint and owner. */
export interface CreatedAccount {
  mint: string;
  owner: string;
  /** Every key the creating instruction names (a reference put on it belongs to this account). */
  keys: string[];
}

export interface DecodedInstructions {
  transfers: TransferInstruction[];
  /** By token account address. */
  created: Map<string, CreatedAccount>;
  /** Program ids of every instruction, top-level and inner. */
  programs: Set<string>;
}

/**
 * Decodes a transaction's SPL token instructions, top-level and inner: its Transfer /
 * TransferChecked instructions (with their Solana Pay reference keys), the token accounts it
 * creates or initialises (create-ATA, InitializeAccount 1/2/3), and every program it invokes.
 */
export function decodeInstructions(
  transaction: RpcTransaction,
  keys: readonly string[],
  signers: number,
  tokenPrograms: ReadonlySet<string>,
): DecodedInstructions {
  const instructions: RpcInstruction[] = [...transaction.transaction.message.instructions];
  for (const group of transaction.meta?.innerInstructions ?? []) instructions.push(...group.instructions);
  const decoded: DecodedInstructions = { transfers: [], created: new Map(), programs: new Set() };
  for (const instruction of instructions) {
    const program = instruction.programId ?? keys[Number(instruction.programIdIndex)] ?? '';
    decoded.programs.add(program);
    if (program !== ASSOCIATED_TOKEN_PROGRAM && !tokenPrograms.has(program)) continue;
    if (typeof instruction.parsed === 'object' && instruction.parsed) {
      const parsed = tokenPrograms.has(program) ? decodeParsedTransfer(instruction.parsed, keys) : undefined;
      if (parsed) decoded.transfers.push(parsed);
      continue;
    }
    if (typeof instruction.data !== 'string' || !instruction.accounts) continue;
    let data: Uint8Array;
    try {
      data = new Uint8Array(base58.encode(instruction.data));
    } catch {
      continue;
    }
    const accounts = instruction.accounts.map((account) => (typeof account === 'string' ? keys.indexOf(account) : Number(account)));
    const key = (position: number) => keys[accounts[position] ?? -1];
    // The ATA program initialises the account it creates by an inner InitializeAccount3: one entry, both instructions' keys.
    const create = (account: string, mint: string, owner: string) => {
      const named = accounts.flatMap((index) => keys[index] ?? []);
      const seen = decoded.created.get(account);
      decoded.created.set(account, seen ? { ...seen, keys: [...seen.keys, ...named] } : { mint, owner, keys: named });
    };
    if (program === ASSOCIATED_TOKEN_PROGRAM) {
      // Create (no data or 0) / CreateIdempotent (1): payer, account, owner, mint, system, token program.
      const ata = key(1);
      const owner = key(2);
      const mint = key(3);
      if (data.length <= 1 && (data[0] ?? 0) <= 1 && ata && owner && mint && tokenPrograms.has(key(5) ?? '')) create(ata, mint, owner);
      continue;
    }
    const tag = data[0];
    if (tag === INITIALIZE_ACCOUNT || tag === INITIALIZE_ACCOUNT_2 || tag === INITIALIZE_ACCOUNT_3) {
      const account = key(0);
      const mint = key(1);
      const owner = tag === INITIALIZE_ACCOUNT ? key(2) : data.length >= 33 ? base58Text.decode(data.subarray(1, 33)) : undefined;
      if (account && mint && owner) create(account, mint, owner);
      continue;
    }
    if ((tag !== TRANSFER && tag !== TRANSFER_CHECKED) || data.length < 9) continue;
    const standard = STANDARD_ACCOUNTS[tag];
    if (accounts.length < standard) continue;
    const amount = new DataView(data.buffer, data.byteOffset + 1, 8).getBigUint64(0, true);
    // Solana Pay: references are read-only, non-signer keys after the standard ones. A multisig
    // authority's co-signers also follow the authority, but they are signers.
    const references = accounts.slice(standard).filter((index) => index >= signers);
    decoded.transfers.push({
      source: accounts[0]!,
      destination: tag === TRANSFER ? accounts[1]! : accounts[2]!,
      mint: tag === TRANSFER_CHECKED ? accounts[1]! : undefined,
      amount,
      references,
      accounts,
    });
  }
  return decoded;
}

/** `jsonParsed` transfer / transferChecked; its extra (reference) keys are not shown in that encoding. */
function decodeParsedTransfer(parsed: Exclude<RpcInstruction['parsed'], string | undefined>, keys: readonly string[]): TransferInstruction | undefined {
  if (parsed.type !== 'transfer' && parsed.type !== 'transferChecked') return undefined;
  const info = parsed.info ?? {};
  const amount = info.amount ?? info.tokenAmount?.amount;
  const source = keys.indexOf(info.source ?? '');
  const destination = keys.indexOf(info.destination ?? '');
  if (amount === undefined || source < 0 || destination < 0) return undefined;
  const mint = info.mint === undefined ? -1 : keys.indexOf(info.mint);
  return {
    source,
    destination,
    mint: mint < 0 ? undefined : mint,
    amount: BigInt(amount),
    references: [],
    accounts: [source, destination, ...(mint < 0 ? [] : [mint])],
  };
}
