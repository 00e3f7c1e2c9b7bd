import { getBase58Encoder } from '@solana/kit';

/**
 * The parts of a `getTransaction` response (encoding `json`, `maxSupportedTransactionVersion: 0`)
 * that the ingester reads. Integers may be JS numbers (raw JSON, fixtures) or bigints
 * (@solana/kit turns u64 values into bigint); amounts are decimal strings either way.
 */
export interface RpcTransaction {
  slot: number | bigint;
  blockTime?: number | bigint | null;
  version?: 'legacy' | number | bigint;
  meta: {
    err: unknown;
    preTokenBalances?: readonly RpcTokenBalance[] | null;
    postTokenBalances?: readonly RpcTokenBalance[] | null;
    innerInstructions?: readonly { index: number | bigint; instructions: readonly RpcInstruction[] }[] | null;
    loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] } | null;
  } | null;
  transaction: {
    signatures: readonly string[];
    message: {
      /** Strings with encoding `json`; `{ pubkey, signer }` objects with `jsonParsed`. */
      accountKeys: readonly (string | { pubkey: string; signer?: boolean })[];
      header?: { numRequiredSignatures: number | bigint };
      instructions: readonly RpcInstruction[];
    };
  };
}

export interface RpcTokenBalance {
  accountIndex: number | bigint;
  mint: string;
  owner?: string;
  programId?: string;
  uiTokenAmount: { amount: string };
}

/** A compiled instruction (encoding `json`), or a parsed one (`jsonParsed`: `parsed.info` carries the accounts by name). */
export interface RpcInstruction {
  programIdIndex?: number | bigint;
  programId?: string;
  accounts?: readonly (number | bigint | string)[];
  data?: string;
  parsed?: { type?: string; info?: { source?: string; destination?: string; amount?: string; tokenAmount?: { amount: string } } } | string;
}

/** One credit (or, for a failed transaction, an attempted credit) of a watched mint into one token account. */
export interface TokenCredit {
  signature: string;
  slot: bigint;
  blockTime: Date | null;
  /** Index of the token account in the transaction's full account list (static keys, then loaded writable, then loaded read-only). Unique per (signature, token account): stored as `transfers.log_index`. */
  accountIndex: number;
  tokenAccount: string;
  mint: string;
  /** The token account's owner (the receiving wallet). */
  owner: string;
  /** Base units: post minus pre balance; for a failed transaction, what its transfer instructions tried to move. */
  amount: bigint;
  /** Owner of the debited token account, when the transaction shows one. */
  from: string | null;
  /** Solana Pay reference keys: the extra read-only keys on the transfer instruction. */
  references: string[];
  failed: boolean;
}

/** SPL token instruction tags (the first data byte) that move tokens between accounts. */
const TRANSFER = 3;
const TRANSFER_CHECKED = 12;
/** Accounts a Transfer takes (source, destination, authority); TransferChecked adds the mint. */
const STANDARD_ACCOUNTS = { [TRANSFER]: 3, [TRANSFER_CHECKED]: 4 } as const;

const base58 = getBase58Encoder();

interface TransferInstruction {
  source: number;
  destination: number;
  amount: bigint;
  references: number[];
}

function decodeTransfers(transaction: RpcTransaction, keys: readonly string[], signers: number, tokenPrograms: ReadonlySet<string>): TransferInstruction[] {
  const instructions: RpcInstruction[] = [...transaction.transaction.message.instructions];
  for (const group of transaction.meta?.innerInstructions ?? []) instructions.push(...group.instructions);
  const found: TransferInstruction[] = [];
  for (const instruction of instructions) {
    const program = instruction.programId ?? keys[Number(instruction.programIdIndex)] ?? '';
    if (!tokenPrograms.has(program)) continue;
    if (typeof instruction.parsed === 'object' && instruction.parsed) {
      const parsed = decodeParsedTransfer(instruction.parsed, keys);
      if (parsed) found.push(parsed);
      continue;
    }
    if (typeof instruction.data !== 'string' || !instruction.accounts) continue;
    let data: Uint8Array;
    try {
      data = new Uint8Array(base58.encode(instruction.data));
    } catch {
      continue;
    }
    const tag = data[0];
    if ((tag !== TRANSFER && tag !== TRANSFER_CHECKED) || data.length < 9) continue;
    const accounts = instruction.accounts.map((account) => (typeof account === 'string' ? keys.indexOf(account) : Number(account)));
    const standard = STANDARD_ACCOUNTS[tag];
    if (accounts.length < standard) continue;
    const amount = new DataView(data.buffer, data.byteOffset + 1, 8).getBigUint64(0, true);
    // Solana Pay: references are read-only, non-signer keys after the standard ones. A multisig
    // authority's co-signers also follow the authority, but they are signers.
    const references = accounts.slice(standard).filter((index) => index >= signers);
    found.push({ source: accounts[0]!, destination: tag === TRANSFER ? accounts[1]! : accounts[2]!, amount, references });
  }
  return found;
}

/** `jsonParsed` transfer / transferChecked; its extra (reference) keys are not shown in that encoding. */
function decodeParsedTransfer(parsed: Exclude<RpcInstruction['parsed'], string | undefined>, keys: readonly string[]): TransferInstruction | undefined {
  if (parsed.type !== 'transfer' && parsed.type !== 'transferChecked') return undefined;
  const info = parsed.info ?? {};
  const amount = info.amount ?? info.tokenAmount?.amount;
  const source = keys.indexOf(info.source ?? '');
  const destination = keys.indexOf(info.destination ?? '');
  if (amount === undefined || source < 0 || destination < 0) return undefined;
  return { source, destination, amount: BigInt(amount), references: [] };
}

function balancesByIndex(balances: readonly RpcTokenBalance[] | null | undefined): Map<number, RpcTokenBalance> {
  return new Map((balances ?? []).map((balance) => [Number(balance.accountIndex), balance]));
}

/**
 * The credits of `mints` in one transaction: for every token account of those mints whose balance
 * grew, post minus pre balance in base units (so whatever instruction moved the tokens, and
 * however many, the credit is what arrived). A failed transaction (`meta.err`) moves nothing; its
 * attempted credits come from its Transfer / TransferChecked instructions and are marked failed.
 * `watched` limits the result to the token accounts the caller watches.
 */
export function parseTokenCredits(
  transaction: RpcTransaction,
  params: { mints: ReadonlySet<string>; tokenPrograms: ReadonlySet<string>; watched?: (tokenAccount: string) => boolean },
): TokenCredit[] {
  const meta = transaction.meta;
  if (!meta) return [];
  const message = transaction.transaction.message;
  const staticKeys = message.accountKeys.map((key) => (typeof key === 'string' ? key : key.pubkey));
  const keys = [...staticKeys, ...(meta.loadedAddresses?.writable ?? []), ...(meta.loadedAddresses?.readonly ?? [])];
  const signers = message.header
    ? Number(message.header.numRequiredSignatures)
    : message.accountKeys.filter((key) => typeof key !== 'string' && key.signer).length;
  const pre = balancesByIndex(meta.preTokenBalances);
  const post = balancesByIndex(meta.postTokenBalances);
  const transfers = decodeTransfers(transaction, keys, signers, params.tokenPrograms);
  const failed = meta.err !== null && meta.err !== undefined;
  const signature = transaction.transaction.signatures[0]!;
  const blockTime = transaction.blockTime === null || transaction.blockTime === undefined ? null : new Date(Number(transaction.blockTime) * 1000);
  const amountOf = (balance: RpcTokenBalance | undefined) => (balance ? BigInt(balance.uiTokenAmount.amount) : 0n);

  const credits: TokenCredit[] = [];
  for (const index of new Set([...pre.keys(), ...post.keys()])) {
    const balance = post.get(index) ?? pre.get(index)!;
    const tokenAccount = keys[index];
    if (!tokenAccount || !params.mints.has(balance.mint)) continue;
    if (params.watched && !params.watched(tokenAccount)) continue;
    const into = transfers.filter((transfer) => transfer.destination === index);
    const amount = failed ? into.reduce((sum, transfer) => sum + transfer.amount, 0n) : amountOf(post.get(index)) - amountOf(pre.get(index));
    if (amount <= 0n) continue;
    credits.push({
      signature,
      slot: BigInt(transaction.slot),
      blockTime,
      accountIndex: index,
      tokenAccount,
      mint: balance.mint,
      owner: balance.owner ?? '',
      amount,
      from: senderOf(index, balance.mint, into, pre, post),
      references: [...new Set(into.flatMap((transfer) => transfer.references.map((reference) => keys[reference]!)))],
      failed,
    });
  }
  return credits;
}

/** The owner of the account the transfer instruction debits, else of the largest debit of the mint. */
function senderOf(index: number, mint: string, into: TransferInstruction[], pre: Map<number, RpcTokenBalance>, post: Map<number, RpcTokenBalance>): string | null {
  for (const transfer of into) {
    const owner = pre.get(transfer.source)?.owner ?? post.get(transfer.source)?.owner;
    if (owner) return owner;
  }
  let best: { owner: string; debit: bigint } | null = null;
  for (const [account, before] of pre) {
    if (account === index || before.mint !== mint || !before.owner) continue;
    const debit = BigInt(before.uiTokenAmount.amount) - BigInt(post.get(account)?.uiTokenAmount.amount ?? '0');
    if (debit > 0n && (!best || debit > best.debit)) best = { owner: before.owner, debit };
  }
  return best?.owner ?? null;
}
