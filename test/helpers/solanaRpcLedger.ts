import { FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from 'litesvm';
import { getBase58Decoder, getBase64Encoder, getCompiledTransactionMessageDecoder, lamports, type Address, type Transaction } from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';

/**
 * The chain behind the test JSON-RPC server: a litesvm instance (the real SPL token program) plus
 * the ledger litesvm does not keep in a form an RPC can serve: which transaction landed in which
 * slot, its pre/post lamport and token balances, and the signatures per address. Every
 * transaction gets its own slot. Slots up to `finalizedSlot` are finalized; the rest are only
 * `confirmed` and can be dropped (`drop`), which is what a fork abandoned before finalization
 * looks like from an RPC.
 */
export interface LedgerEntry {
  signature: string;
  slot: bigint;
  blockTime: number;
  version: 'legacy' | 0;
  signatures: string[];
  accountKeys: Address[];
  header: { numRequiredSignatures: number; numReadonlySignedAccounts: number; numReadonlyUnsignedAccounts: number };
  recentBlockhash: string;
  instructions: { programIdIndex: number; accounts: number[]; data: string; stackHeight: null }[];
  addressTableLookups: { accountKey: Address; writableIndexes: number[]; readonlyIndexes: number[] }[];
  meta: Record<string, unknown> & { err: unknown };
  /** Accounts written by the transaction (for account notifications). */
  writable: Address[];
  /** On a fork the cluster did not root: listed as `confirmed` forever, never finalized. */
  orphaned?: boolean;
}

const TOKEN_PROGRAMS = new Set<string>([TOKEN_PROGRAM_ADDRESS, 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb']);
const base58 = getBase58Decoder();

/** RPC JSON form of a litesvm transaction error (`{"InstructionError":[0,{"Custom":1}]}`). */
function errorJson(failed: FailedTransactionMetadata): unknown {
  const err = failed.err() as unknown as { index?: number; err?: () => unknown; toString(): string };
  if (typeof err === 'object' && err && typeof err.err === 'function' && typeof err.index === 'number') {
    const inner = err.err() as { code?: number; toString(): string } | number | string;
    if (typeof inner === 'object' && inner && typeof inner.code === 'number') return { InstructionError: [err.index, { Custom: inner.code }] };
    return { InstructionError: [err.index, String(inner)] };
  }
  return String(typeof err === 'number' ? `TransactionError(${err})` : err);
}

/** The legacy and v0 compiled message shapes (@solana/kit), which is all this server accepts. */
interface CompiledMessage {
  version: 'legacy' | 0;
  header: { numSignerAccounts: number; numReadonlySignerAccounts: number; numReadonlyNonSignerAccounts: number };
  staticAccounts: Address[];
  lifetimeToken: string;
  instructions: { programAddressIndex: number; accountIndices?: number[]; data?: Uint8Array }[];
  addressTableLookups?: { lookupTableAddress: Address; writableIndexes: readonly number[]; readonlyIndexes: readonly number[] }[];
}

export interface Ledger {
  readonly svm: LiteSVM;
  readonly entries: LedgerEntry[];
  slot: bigint;
  finalizedSlot: bigint;
  /** Runs `transaction` in a new slot and records it; a failed one is recorded with `meta.err`. */
  execute(transaction: Transaction): LedgerEntry;
  /** Moves to a new slot with no transaction (time passes). */
  advance(slots?: number): void;
  /** Marks every slot up to `slot` (default: the current one) finalized. */
  finalize(slot?: bigint): void;
  /** Removes an unfinalized transaction, as a fork switch would. */
  drop(signature: string): void;
  /** Leaves an unfinalized transaction on a fork that will not be rooted: still listed, never final. */
  orphan(signature: string): void;
  /** Whether the transaction counts as finalized now. */
  isFinalized(entry: LedgerEntry): boolean;
  find(signature: string): LedgerEntry | undefined;
  /** Newest first, like getSignaturesForAddress. */
  forAddress(address: string): LedgerEntry[];
  onChange(listener: (entry: LedgerEntry | undefined) => void): () => void;
  tokenBalance(address: Address): bigint | undefined;
}

export function createLedger(params: { startSlot?: bigint } = {}): Ledger {
  const svm = new LiteSVM();
  const entries: LedgerEntry[] = [];
  const byAddress = new Map<string, LedgerEntry[]>();
  const listeners = new Set<(entry: LedgerEntry | undefined) => void>();
  const ledger: Ledger = {
    svm,
    entries,
    slot: params.startSlot ?? 1000n,
    finalizedSlot: (params.startSlot ?? 1000n) - 1n,
    execute,
    advance(slots = 1) {
      ledger.slot += BigInt(slots);
      svm.warpToSlot(ledger.slot);
      notify(undefined);
    },
    finalize(slot) {
      const target = slot ?? ledger.slot;
      if (target > ledger.finalizedSlot) ledger.finalizedSlot = target;
      notify(undefined);
    },
    drop(signature) {
      const entry = ledger.find(signature);
      if (!entry) throw new Error(`unknown signature ${signature}`);
      if (entry.slot <= ledger.finalizedSlot) throw new Error(`${signature} is finalized; it cannot be dropped`);
      entries.splice(entries.indexOf(entry), 1);
      for (const key of entry.accountKeys) {
        const list = byAddress.get(key);
        if (list) list.splice(list.indexOf(entry), 1);
      }
      notify(undefined);
    },
    orphan(signature) {
      const entry = ledger.find(signature);
      if (!entry) throw new Error(`unknown signature ${signature}`);
      if (entry.slot <= ledger.finalizedSlot) throw new Error(`${signature} is finalized; it cannot be orphaned`);
      entry.orphaned = true;
    },
    isFinalized: (entry) => !entry.orphaned && entry.slot <= ledger.finalizedSlot,
    find: (signature) => entries.find((entry) => entry.signature === signature),
    forAddress: (address) => [...(byAddress.get(address) ?? [])].reverse(),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    tokenBalance(address) {
      return tokenAccount(address)?.amount;
    },
  };
  svm.warpToSlot(ledger.slot);

  function notify(entry: LedgerEntry | undefined) {
    for (const listener of listeners) listener(entry);
  }

  function tokenAccount(address: Address): { mint: Address; owner: Address; amount: bigint; programId: Address } | undefined {
    const account = svm.getAccount(address);
    if (!account.exists || !TOKEN_PROGRAMS.has(account.programAddress) || account.data.length < 165) return undefined;
    const view = new DataView(account.data.buffer, account.data.byteOffset, account.data.byteLength);
    return {
      mint: base58.decode(account.data.subarray(0, 32)) as Address,
      owner: base58.decode(account.data.subarray(32, 64)) as Address,
      amount: view.getBigUint64(64, true),
      programId: account.programAddress,
    };
  }

  function mintDecimals(mint: Address): number {
    const account = svm.getAccount(mint);
    return account.exists ? account.data[44]! : 0;
  }

  function tokenBalances(keys: Address[]) {
    const balances: Record<string, unknown>[] = [];
    keys.forEach((key, accountIndex) => {
      const token = tokenAccount(key);
      if (!token) return;
      const decimals = mintDecimals(token.mint);
      const ui = Number(token.amount) / 10 ** decimals;
      balances.push({
        accountIndex,
        mint: token.mint,
        owner: token.owner,
        programId: token.programId,
        uiTokenAmount: { amount: token.amount.toString(), decimals, uiAmount: token.amount === 0n ? null : ui, uiAmountString: String(ui) },
      });
    });
    return balances;
  }

  function execute(transaction: Transaction): LedgerEntry {
    const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes) as unknown as CompiledMessage;
    const signatures = Object.values(transaction.signatures).map((bytes) => (bytes ? base58.decode(bytes) : '1'.repeat(64)));
    const lookups = message.version === 0 ? (message.addressTableLookups ?? []) : [];
    const loaded = { writable: [] as Address[], readonly: [] as Address[] };
    for (const lookup of lookups) {
      const table = svm.getAccount(lookup.lookupTableAddress);
      if (!table.exists) throw new Error(`lookup table ${lookup.lookupTableAddress} does not exist`);
      const at = (index: number) => base58.decode(table.data.subarray(56 + index * 32, 88 + index * 32)) as Address;
      loaded.writable.push(...lookup.writableIndexes.map(at));
      loaded.readonly.push(...lookup.readonlyIndexes.map(at));
    }
    const keys = [...message.staticAccounts, ...loaded.writable, ...loaded.readonly];
    const header = message.header;
    const staticCount = message.staticAccounts.length;
    const writable = keys.filter((_, index) => {
      if (index >= staticCount) return index < staticCount + loaded.writable.length;
      if (index < header.numSignerAccounts) return index < header.numSignerAccounts - header.numReadonlySignerAccounts;
      return index < staticCount - header.numReadonlyNonSignerAccounts;
    });

    ledger.slot += 1n;
    svm.warpToSlot(ledger.slot);
    const preBalances = keys.map((key) => Number(svm.getBalance(key) ?? 0n));
    const preTokenBalances = tokenBalances(keys);
    const result = svm.sendTransaction(transaction);
    const failed = result instanceof FailedTransactionMetadata;
    const meta: TransactionMetadata = failed ? result.meta() : (result as TransactionMetadata);
    const fee = 5000 * Math.max(1, header.numSignerAccounts);
    const err = failed ? errorJson(result) : null;
    const innerInstructions = meta
      .innerInstructions()
      .map((list, index) => ({
        index,
        instructions: list.map((inner) => ({
          programIdIndex: inner.instruction().programIdIndex(),
          accounts: [...inner.instruction().accounts()],
          data: base58.decode(inner.instruction().data()),
          stackHeight: inner.stackHeight(),
        })),
      }))
      .filter((group) => group.instructions.length > 0);
    const entry: LedgerEntry = {
      signature: signatures[0]!,
      slot: ledger.slot,
      // Wall-clock time, as on a live cluster: the engine compares it with session windows.
      blockTime: Math.floor(Date.now() / 1000),
      version: message.version === 0 ? 0 : 'legacy',
      signatures,
      accountKeys: keys,
      header: {
        numRequiredSignatures: header.numSignerAccounts,
        numReadonlySignedAccounts: header.numReadonlySignerAccounts,
        numReadonlyUnsignedAccounts: header.numReadonlyNonSignerAccounts,
      },
      recentBlockhash: message.lifetimeToken,
      instructions: message.instructions.map((instruction) => ({
        programIdIndex: instruction.programAddressIndex,
        accounts: [...(instruction.accountIndices ?? [])],
        data: base58.decode(instruction.data ?? new Uint8Array()),
        stackHeight: null,
      })),
      addressTableLookups: lookups.map((lookup) => ({
        accountKey: lookup.lookupTableAddress,
        writableIndexes: [...lookup.writableIndexes],
        readonlyIndexes: [...lookup.readonlyIndexes],
      })),
      meta: {
        err,
        status: err ? { Err: err } : { Ok: null },
        fee,
        preBalances,
        postBalances: keys.map((key) => Number(svm.getBalance(key) ?? 0n)),
        preTokenBalances,
        postTokenBalances: tokenBalances(keys),
        innerInstructions,
        logMessages: meta.logs(),
        loadedAddresses: loaded,
        rewards: [],
        computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
      },
      writable,
    };
    entries.push(entry);
    for (const key of new Set(keys)) {
      const list = byAddress.get(key) ?? [];
      list.push(entry);
      byAddress.set(key, list);
    }
    notify(entry);
    return entry;
  }

  return ledger;
}

/** Account data as the RPC's base64 encoding carries it. */
export function encodeAccountInfo(svm: LiteSVM, address: Address) {
  const account = svm.getAccount(address);
  if (!account.exists) return null;
  return {
    data: [Buffer.from(account.data).toString('base64'), 'base64'],
    executable: account.executable,
    lamports: Number(account.lamports),
    owner: account.programAddress,
    rentEpoch: 0,
    space: account.data.length,
  };
}

export const decodeBase64 = (text: string) => new Uint8Array(getBase64Encoder().encode(text));
export { lamports };
