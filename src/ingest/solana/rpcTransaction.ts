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
      /** Strings with encoding `json`; `{ pubkey, signer, writable }` objects with `jsonParsed`. */
      accountKeys: readonly (string | { pubkey: string; signer?: boolean; writable?: boolean })[];
      header?: { numRequiredSignatures: number | bigint; numReadonlyUnsignedAccounts?: number | bigint };
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
  parsed?: { type?: string; info?: { source?: string; destination?: string; mint?: string; amount?: string; tokenAmount?: { amount: string } } } | string;
}
