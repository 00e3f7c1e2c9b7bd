import { decodeInstructions, WELL_KNOWN, type TransferInstruction } from './instructions.ts';

export type { RpcInstruction, RpcTokenBalance, RpcTransaction } from './rpcTransaction.ts';
import type { RpcTokenBalance, RpcTransaction } from './rpcTransaction.ts';

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
  /**
   * Solana Pay reference keys: the extra read-only keys on the transfer instruction into the
   * account; when it carries none, the transaction's other candidate keys (see `parseTokenCredits`).
   */
  references: string[];
  failed: boolean;
}

function balancesByIndex(balances: readonly RpcTokenBalance[] | null | undefined): Map<number, RpcTokenBalance> {
  return new Map((balances ?? []).map((balance) => [Number(balance.accountIndex), balance]));
}

/**
 * Indexes of the transaction's read-only, non-signer keys: with encoding `json`, the static keys
 * the header counts as read-only unsigned (the last ones) plus the lookup tables' read-only keys;
 * with `jsonParsed`, the keys flagged neither writable nor signer.
 */
function readonlyUnsigned(transaction: RpcTransaction, staticCount: number, loadedWritable: number, loadedReadonly: number): number[] {
  const message = transaction.transaction.message;
  if (message.accountKeys.some((key) => typeof key !== 'string')) {
    return message.accountKeys.flatMap((key, index) => (typeof key !== 'string' && key.writable === false && !key.signer ? [index] : []));
  }
  const unsigned = message.header?.numReadonlyUnsignedAccounts;
  const indexes: number[] = [];
  if (unsigned !== undefined) for (let index = staticCount - Number(unsigned); index < staticCount; index += 1) indexes.push(index);
  for (let index = 0; index < loadedReadonly; index += 1) indexes.push(staticCount + loadedWritable + index);
  return indexes;
}

/**
 * The credits of `mints` in one transaction: for every token account of those mints whose balance
 * grew, post minus pre balance in base units (so whatever instruction moved the tokens, and
 * however many, the credit is what arrived). A failed transaction (`meta.err`) moves nothing; its
 * attempted credits come from its Transfer / TransferChecked instructions and are marked failed,
 * also into a token account the transaction was creating (which then has no token balance entry:
 * its mint is TransferChecked's mint account, or the mint the transaction's create-ATA /
 * InitializeAccount instruction gave it).
 * `watched` limits the result to the token accounts the caller watches.
 *
 * References: a Solana Pay wallet puts the reference on the transfer instruction (read-only,
 * non-signer keys after its standard accounts); those are the credit's references when there are
 * any. When the transfer into the account carries none (the reference was put on another
 * instruction, e.g. the create-ATA, or the tokens arrived by a program's CPI), the candidates are
 * the transaction's other read-only, non-signer keys (static and loaded from lookup tables) that
 * are not: a program any instruction invokes, a well-known program or sysvar, a mint, a token
 * account, a key of a token transfer instruction (another transfer's accounts and references belong
 * to that transfer), a key of the instruction creating another token account (likewise), or the
 * receiving account and its owner. Matching looks sessions up by
 * `reference = ANY(reference_keys)` and a reference is a random key unique per session, so an
 * unrelated key (a pool, an oracle) names no session and the credit falls back to amount matching.
 */
export function parseTokenCredits(
  transaction: RpcTransaction,
  params: { mints: ReadonlySet<string>; tokenPrograms: ReadonlySet<string>; watched?: (tokenAccount: string) => boolean },
): TokenCredit[] {
  const meta = transaction.meta;
  if (!meta) return [];
  const message = transaction.transaction.message;
  const staticKeys = message.accountKeys.map((key) => (typeof key === 'string' ? key : key.pubkey));
  const loadedWritable = meta.loadedAddresses?.writable ?? [];
  const loadedReadonly = meta.loadedAddresses?.readonly ?? [];
  const keys = [...staticKeys, ...loadedWritable, ...loadedReadonly];
  const signers = message.header
    ? Number(message.header.numRequiredSignatures)
    : message.accountKeys.filter((key) => typeof key !== 'string' && key.signer).length;
  const pre = balancesByIndex(meta.preTokenBalances);
  const post = balancesByIndex(meta.postTokenBalances);
  const { transfers, created, programs } = decodeInstructions(transaction, keys, signers, params.tokenPrograms);
  const failed = meta.err !== null && meta.err !== undefined;
  const signature = transaction.transaction.signatures[0]!;
  const blockTime = transaction.blockTime === null || transaction.blockTime === undefined ? null : new Date(Number(transaction.blockTime) * 1000);
  const amountOf = (balance: RpcTokenBalance | undefined) => (balance ? BigInt(balance.uiTokenAmount.amount) : 0n);

  // Keys that cannot be a reference, whichever account is credited (see above).
  const excluded = new Set<string>([...programs, ...params.mints, ...params.tokenPrograms]);
  for (const balance of [...pre.values(), ...post.values()]) {
    excluded.add(balance.mint);
    const account = keys[Number(balance.accountIndex)];
    if (account) excluded.add(account);
  }
  for (const transfer of transfers) for (const index of transfer.accounts) excluded.add(keys[index] ?? '');
  for (const [account, { mint, owner }] of created) excluded.add(account).add(mint).add(owner);
  const candidates = readonlyUnsigned(transaction, staticKeys.length, loadedWritable.length, loadedReadonly.length)
    .map((index) => keys[index])
    .filter((key): key is string => key !== undefined && !excluded.has(key) && !WELL_KNOWN.has(key) && !key.startsWith('Sysvar'));

  const credit = (index: number, mint: string, owner: string, amount: bigint, into: TransferInstruction[]): TokenCredit => {
    const tokenAccount = keys[index]!;
    const own = [...new Set(into.flatMap((transfer) => transfer.references.map((reference) => keys[reference]!)))];
    // Keys on the instruction creating another token account belong to that account.
    const others = new Set([...created].flatMap(([account, made]) => (account === tokenAccount ? [] : made.keys)));
    return {
      signature,
      slot: BigInt(transaction.slot),
      blockTime,
      accountIndex: index,
      tokenAccount,
      mint,
      owner,
      amount,
      from: senderOf(index, mint, into, pre, post),
      references: own.length > 0 ? own : [...new Set(candidates.filter((key) => key !== tokenAccount && key !== owner && !others.has(key)))],
      failed,
    };
  };

  const credits: TokenCredit[] = [];
  for (const index of new Set([...pre.keys(), ...post.keys()])) {
    const balance = post.get(index) ?? pre.get(index)!;
    const tokenAccount = keys[index];
    if (!tokenAccount || !params.mints.has(balance.mint)) continue;
    if (params.watched && !params.watched(tokenAccount)) continue;
    const into = transfers.filter((transfer) => transfer.destination === index);
    const amount = failed ? into.reduce((sum, transfer) => sum + transfer.amount, 0n) : amountOf(post.get(index)) - amountOf(pre.get(index));
    if (amount <= 0n) continue;
    credits.push(credit(index, balance.mint, balance.owner ?? '', amount, into));
  }
  if (failed) {
    // A failed transaction rolls back the token account it was creating: no balance entry shows
    // it, but its transfer instructions still say what it tried to move into it.
    const destinations = new Set(transfers.map((transfer) => transfer.destination).filter((index) => !pre.has(index) && !post.has(index)));
    for (const index of destinations) {
      const tokenAccount = keys[index];
      if (!tokenAccount || (params.watched && !params.watched(tokenAccount))) continue;
      const into = transfers.filter((transfer) => transfer.destination === index);
      const made = created.get(tokenAccount);
      const checkedMint = into.map((transfer) => (transfer.mint === undefined ? undefined : keys[transfer.mint])).find((mint) => mint !== undefined);
      const mint = checkedMint ?? made?.mint;
      if (!mint || !params.mints.has(mint)) continue;
      const amount = into.reduce((sum, transfer) => sum + transfer.amount, 0n);
      if (amount <= 0n) continue;
      credits.push(credit(index, mint, made?.owner ?? '', amount, into));
    }
  }
  return credits;
}

/** The owner of the account the transfer instruction debits, else of the largest debit of the mint. */
function senderOf(
  index: number,
  mint: string,
  into: TransferInstruction[],
  pre: Map<number, RpcTokenBalance>,
  post: Map<number, RpcTokenBalance>,
): string | null {
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
