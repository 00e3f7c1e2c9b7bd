import { getBase58Decoder, getTransactionDecoder, type Address } from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { decodeBase64, encodeAccountInfo, type Ledger, type LedgerEntry } from './solanaRpcLedger.ts';

const BASE58 = getBase58Decoder();

/**
 * The JSON-RPC methods the test Solana server (solanaRpc.ts) answers, read from and written to
 * `ledger` as a node would: getSlot, getBlockHeight, getLatestBlockhash, getAccountInfo,
 * getBalance, getTokenAccountsByOwner, getSignaturesForAddress, getTransaction,
 * getSignatureStatuses, simulateTransaction, sendTransaction. A handler throws RpcError for a JSON-RPC error answer.
 */
export function rpcMethods(ledger: Ledger): Record<string, (params: unknown[]) => unknown> {
  const svm = ledger.svm;
  return {
    getSlot: ([config]) => Number(commitmentOf(config) === 'finalized' ? ledger.finalizedSlot : ledger.slot),
    getBlockHeight: () => Number(ledger.slot),
    getLatestBlockhash: () => ({
      context: { slot: Number(ledger.slot) },
      value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: Number(ledger.slot) + 150 },
    }),
    getAccountInfo: ([address]) => ({ context: { slot: Number(ledger.slot) }, value: encodeAccountInfo(svm, address as Address) }),
    getBalance: ([address]) => ({ context: { slot: Number(ledger.slot) }, value: Number(svm.getBalance(address as Address) ?? 0n) }),
    getTokenAccountsByOwner: ([owner, filter]) => {
      const { mint, programId } = filter as { mint?: string; programId?: string };
      const value = [];
      for (const account of svm.getProgramAccounts(TOKEN_PROGRAM_ADDRESS)) {
        if (account.data.length < 165) continue;
        const accountMint = decodeAddress(account.data.subarray(0, 32));
        const accountOwner = decodeAddress(account.data.subarray(32, 64));
        if (accountOwner !== owner || (mint && accountMint !== mint) || (programId && programId !== TOKEN_PROGRAM_ADDRESS)) continue;
        value.push({ pubkey: account.address, account: encodeAccountInfo(svm, account.address) });
      }
      return { context: { slot: Number(ledger.slot) }, value };
    },
    getSignaturesForAddress: ([address, config]) => {
      const { limit = 1000, before, until } = (config ?? {}) as { limit?: number; before?: string; until?: string };
      const finalizedOnly = commitmentOf(config) === 'finalized';
      let list = ledger.forAddress(address as string).filter((entry) => !finalizedOnly || ledger.isFinalized(entry));
      if (before) {
        const at = list.findIndex((entry) => entry.signature === before);
        list = at < 0 ? [] : list.slice(at + 1);
      }
      if (until) {
        const at = list.findIndex((entry) => entry.signature === until);
        if (at >= 0) list = list.slice(0, at);
      }
      return list.slice(0, Math.min(limit, 1000)).map((entry) => ({
        signature: entry.signature,
        slot: Number(entry.slot),
        err: entry.meta.err,
        memo: null,
        blockTime: entry.blockTime,
        confirmationStatus: ledger.isFinalized(entry) ? 'finalized' : 'confirmed',
      }));
    },
    getTransaction: ([signature, config]) => {
      const { maxSupportedTransactionVersion, encoding = 'json' } = (config ?? {}) as { maxSupportedTransactionVersion?: number; encoding?: string };
      if (encoding !== 'json') throw new RpcError(-32602, `this test server serves encoding "json" only, not ${encoding}`);
      const entry = ledger.find(signature as string);
      if (!entry || (commitmentOf(config) === 'finalized' && !ledger.isFinalized(entry))) return null;
      if (entry.version === 0 && maxSupportedTransactionVersion === undefined) {
        throw new RpcError(
          -32015,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      }
      return {
        slot: Number(entry.slot),
        blockTime: entry.blockTime,
        version: entry.version,
        meta: entry.meta,
        transaction: {
          signatures: entry.signatures,
          message: {
            accountKeys: entry.accountKeys.slice(0, entry.accountKeys.length - countLoaded(entry)),
            header: entry.header,
            recentBlockhash: entry.recentBlockhash,
            instructions: entry.instructions,
            ...(entry.version === 0 ? { addressTableLookups: entry.addressTableLookups } : {}),
          },
        },
      };
    },
    getSignatureStatuses: ([signatures]) => ({
      context: { slot: Number(ledger.slot) },
      value: (signatures as string[]).map((signature) => {
        const entry = ledger.find(signature);
        if (!entry) return null;
        const finalized = ledger.isFinalized(entry);
        return {
          slot: Number(entry.slot),
          confirmations: finalized ? null : Number(ledger.slot - entry.slot),
          err: entry.meta.err,
          status: entry.meta.status,
          confirmationStatus: finalized ? 'finalized' : 'confirmed',
        };
      }),
    }),
    simulateTransaction: ([wire, config]) => {
      const { encoding = 'base58' } = (config ?? {}) as { encoding?: string };
      if (encoding !== 'base64') throw new RpcError(-32602, 'this test server accepts base64 transactions only');
      const transaction = getTransactionDecoder().decode(decodeBase64(wire as string));
      const simulated = svm.simulateTransaction(transaction);
      const meta = simulated.meta();
      return {
        context: { slot: Number(ledger.slot) },
        value: {
          err: 'err' in simulated ? `TransactionError(${String(simulated.err())})` : null,
          logs: meta.logs(),
          unitsConsumed: Number(meta.computeUnitsConsumed()),
          accounts: null,
          returnData: null,
        },
      };
    },
    sendTransaction: ([wire, config]) => {
      const { encoding = 'base58', skipPreflight = false } = (config ?? {}) as { encoding?: string; skipPreflight?: boolean };
      if (encoding !== 'base64') throw new RpcError(-32602, 'this test server accepts base64 transactions only');
      const transaction = getTransactionDecoder().decode(decodeBase64(wire as string));
      // A transaction the cluster has already: a node answers its signature and drops the copy
      // (the status cache), so a resend never runs it twice.
      const first = Object.values(transaction.signatures)[0];
      const known = first ? ledger.find(BASE58.decode(first)) : undefined;
      if (known) {
        if (!skipPreflight) throw new RpcError(-32002, 'Transaction simulation failed: This transaction has already been processed');
        return known.signature;
      }
      if (!skipPreflight) {
        const simulated = svm.simulateTransaction(transaction);
        if ('err' in simulated) throw new RpcError(-32002, `Transaction simulation failed: ${String(simulated.err())}`);
      }
      return ledger.execute(transaction).signature;
    },
  };
}

/** A JSON-RPC error answer: `code` and `message` as a node sends them. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function commitmentOf(config: unknown): string {
  return ((config ?? {}) as { commitment?: string }).commitment ?? 'finalized';
}

function countLoaded(entry: LedgerEntry): number {
  const loaded = entry.meta.loadedAddresses as { writable: string[]; readonly: string[] };
  return loaded.writable.length + loaded.readonly.length;
}

function decodeAddress(bytes: Uint8Array): string {
  return BASE58.decode(bytes);
}
