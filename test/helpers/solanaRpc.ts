import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  AccountRole,
  appendTransactionMessageInstructions,
  compressTransactionMessageUsingAddressLookupTables,
  getAddressEncoder,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase58Decoder,
  getTransactionDecoder,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
  type Transaction,
} from '@solana/kit';
import {
  TOKEN_PROGRAM_ADDRESS,
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getMintEncoder,
  getMintToInstruction,
  getTransferCheckedInstruction,
  getTransferInstruction,
} from '@solana-program/token';
import { loadChains } from '../../src/internal/chains.ts';
import { createLedger, decodeBase64, encodeAccountInfo, type Ledger, type LedgerEntry } from './solanaRpcLedger.ts';

/**
 * A local Solana JSON-RPC + WebSocket server backed by litesvm (the real SPL token program), with
 * the production USDC and USDT mints installed at their mainnet addresses, so the production
 * `chains/solana.json` runs unchanged against it. It serves the methods the ingester and a payer
 * use: getSlot, getLatestBlockhash, getAccountInfo, getBalance, getTokenAccountsByOwner,
 * getSignaturesForAddress, getTransaction, getSignatureStatuses, sendTransaction, and the
 * accountSubscribe / slotSubscribe WebSocket methods.
 */
export interface SolanaTestRpc {
  url: string;
  wsUrl: string;
  ledger: Ledger;
  /** Mint address of each currency (the real mainnet mints). */
  mints: { USDC: Address; USDT: Address };
  /** JSON-RPC requests served, by method. */
  calls: Map<string, number>;
  /** Makes the next `count` requests of `method` answer a JSON-RPC error (provider trouble). */
  failNext(method: string, count?: number): void;
  /** A funded keypair (SOL for fees). */
  wallet(): Promise<KeyPairSigner>;
  /** Mints `amount` base units of `currency` to `owner`'s associated token account. */
  fund(owner: Address, currency: 'USDC' | 'USDT', amount: bigint): Promise<LedgerEntry>;
  ata(owner: Address, currency: 'USDC' | 'USDT'): Promise<Address>;
  /**
   * Pays `amount` of `currency` from `from` to `to`'s associated token account (created in the
   * same transaction, idempotently), as a wallet following Solana Pay would: TransferChecked by
   * default, `references` appended to the transfer instruction as read-only keys.
   */
  pay(params: {
    from: KeyPairSigner;
    to: Address;
    currency: 'USDC' | 'USDT';
    amount: bigint;
    checked?: boolean;
    references?: Address[];
    version?: 'legacy' | 0;
    /** Pay into this token account instead of the associated one. */
    toTokenAccount?: Address;
  }): Promise<LedgerEntry>;
  /** Signs and runs instructions (the first signer pays fees); v0 messages load what they can from `lookupTables`. */
  send(feePayer: KeyPairSigner, instructions: Instruction[], version?: 'legacy' | 0, lookupTables?: Record<Address, Address[]>): Promise<LedgerEntry>;
  /** Installs an address lookup table holding `addresses` (as the ALT program would leave it) and returns its address. */
  lookupTable(addresses: Address[]): Promise<Address>;
  stop(): Promise<void>;
}

const MINT_SPACE = 82;
const BASE58 = getBase58Decoder();

export async function startSolanaRpc(params: { startSlot?: bigint } = {}): Promise<SolanaTestRpc> {
  const ledger = createLedger({ startSlot: params.startSlot });
  const svm = ledger.svm;
  const chain = loadChains().solana;
  const mintAuthority = await generateKeyPairSigner();
  svm.airdrop(mintAuthority.address, lamports(1_000_000_000_000n));
  const mints = {} as { USDC: Address; USDT: Address };
  for (const token of chain.tokens) {
    const data = new Uint8Array(getMintEncoder().encode({ mintAuthority: mintAuthority.address, supply: 0n, decimals: token.decimals, isInitialized: true, freezeAuthority: null }));
    svm.setAccount({ address: token.address as Address, data, executable: false, lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(MINT_SPACE))), programAddress: TOKEN_PROGRAM_ADDRESS, space: BigInt(data.length) });
    mints[token.currency] = token.address as Address;
  }

  const calls = new Map<string, number>();
  const failures = new Map<string, number>();

  async function send(feePayer: KeyPairSigner, instructions: Instruction[], version: 'legacy' | 0 = 0, lookupTables?: Record<Address, Address[]>) {
    const built = pipe(
      createTransactionMessage({ version: version as 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => svm.setTransactionMessageLifetimeUsingLatestBlockhash(m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    const message = lookupTables ? compressTransactionMessageUsingAddressLookupTables(built, lookupTables) : built;
    const transaction = await signTransactionMessageWithSigners(message);
    const entry = ledger.execute(transaction as Transaction);
    // A fresh blockhash per transaction, so identical payments are distinct transactions.
    svm.expireBlockhash();
    return entry;
  }

  const ata = async (owner: Address, currency: 'USDC' | 'USDT') =>
    (await findAssociatedTokenPda({ owner, mint: mints[currency], tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

  const handlers: Record<string, (params: unknown[]) => unknown> = {
    getSlot: ([config]) => Number(commitmentOf(config) === 'finalized' ? ledger.finalizedSlot : ledger.slot),
    getBlockHeight: () => Number(ledger.slot),
    getLatestBlockhash: () => ({ context: { slot: Number(ledger.slot) }, value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: Number(ledger.slot) + 150 } }),
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
        throw new RpcError(-32015, 'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0');
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
        return { slot: Number(entry.slot), confirmations: finalized ? null : Number(ledger.slot - entry.slot), err: entry.meta.err, status: entry.meta.status, confirmationStatus: finalized ? 'finalized' : 'confirmed' };
      }),
    }),
    sendTransaction: ([wire, config]) => {
      const { encoding = 'base58', skipPreflight = false } = (config ?? {}) as { encoding?: string; skipPreflight?: boolean };
      if (encoding !== 'base64') throw new RpcError(-32602, 'this test server accepts base64 transactions only');
      const transaction = getTransactionDecoder().decode(decodeBase64(wire as string));
      if (!skipPreflight) {
        const simulated = svm.simulateTransaction(transaction);
        if ('err' in simulated) throw new RpcError(-32002, 'Transaction simulation failed: ' + String(simulated.err()));
      }
      return ledger.execute(transaction).signature;
    },
  };

  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return reply(response, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      const answer = Array.isArray(parsed) ? parsed.map(handle) : handle(parsed);
      reply(response, answer);
    });
  });

  function handle(raw: unknown) {
    const { id = null, method, params: args = [] } = raw as { id?: unknown; method: string; params?: unknown[] };
    calls.set(method, (calls.get(method) ?? 0) + 1);
    const failing = failures.get(method) ?? 0;
    if (failing > 0) {
      failures.set(method, failing - 1);
      return { jsonrpc: '2.0', id, error: { code: -32005, message: 'Node is behind (test failure)' } };
    }
    const handler = handlers[method];
    if (!handler) return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } };
    try {
      return { jsonrpc: '2.0', id, result: handler(args) };
    } catch (error) {
      if (error instanceof RpcError) return { jsonrpc: '2.0', id, error: { code: error.code, message: error.message } };
      return { jsonrpc: '2.0', id, error: { code: -32603, message: String(error) } };
    }
  }

  const wss = new WebSocketServer({ server });
  let nextSubscription = 1;
  const subscriptions = new Map<number, { socket: WebSocket; kind: 'account' | 'slot'; address?: string }>();
  wss.on('connection', (socket) => {
    socket.on('message', (data) => {
      let request: { id?: unknown; method?: string; params?: unknown[] };
      try {
        request = JSON.parse(String(data));
      } catch {
        return;
      }
      const { id, method, params: args = [] } = request;
      calls.set(`ws:${method}`, (calls.get(`ws:${method}`) ?? 0) + 1);
      const respond = (result: unknown) => socket.send(JSON.stringify({ jsonrpc: '2.0', id, result }));
      if (method === 'accountSubscribe' || method === 'slotSubscribe') {
        const subscription = nextSubscription++;
        subscriptions.set(subscription, { socket, kind: method === 'slotSubscribe' ? 'slot' : 'account', address: args[0] as string });
        return respond(subscription);
      }
      if (method === 'accountUnsubscribe' || method === 'slotUnsubscribe') return respond(subscriptions.delete(args[0] as number));
      if (id !== undefined) socket.send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }));
    });
    socket.on('close', () => {
      for (const [id, subscription] of subscriptions) if (subscription.socket === socket) subscriptions.delete(id);
    });
  });

  ledger.onChange((entry) => {
    for (const [subscription, { socket, kind, address }] of subscriptions) {
      if (socket.readyState !== socket.OPEN) continue;
      if (kind === 'slot') {
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'slotNotification', params: { subscription, result: { parent: Number(ledger.slot) - 1, root: Number(ledger.finalizedSlot), slot: Number(ledger.slot) } } }));
      } else if (entry && address && entry.writable.includes(address as Address)) {
        const value = encodeAccountInfo(svm, address as Address) ?? { data: ['', 'base64'], executable: false, lamports: 0, owner: '11111111111111111111111111111111', rentEpoch: 0, space: 0 };
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'accountNotification', params: { subscription, result: { context: { slot: Number(ledger.slot) }, value } } }));
      }
    }
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    ledger,
    mints,
    calls,
    failNext(method, count = 1) {
      failures.set(method, (failures.get(method) ?? 0) + count);
    },
    async wallet() {
      const signer = await generateKeyPairSigner();
      svm.airdrop(signer.address, lamports(10_000_000_000n));
      return signer;
    },
    async fund(owner, currency, amount) {
      const account = await ata(owner, currency);
      return send(mintAuthority, [
        getCreateAssociatedTokenIdempotentInstruction({ payer: mintAuthority, ata: account, owner, mint: mints[currency] }),
        getMintToInstruction({ mint: mints[currency], token: account, mintAuthority, amount }),
      ]);
    },
    ata,
    async pay({ from, to, currency, amount, checked = true, references = [], version = 0, toTokenAccount }) {
      const source = await ata(from.address, currency);
      const destination = toTokenAccount ?? (await ata(to, currency));
      const transfer = checked
        ? getTransferCheckedInstruction({ source, mint: mints[currency], destination, authority: from, amount, decimals: 6 })
        : getTransferInstruction({ source, destination, authority: from, amount });
      const withReferences: Instruction = { ...transfer, accounts: [...transfer.accounts, ...references.map((address) => ({ address, role: AccountRole.READONLY }))] };
      const instructions: Instruction[] = toTokenAccount ? [] : [getCreateAssociatedTokenIdempotentInstruction({ payer: from, ata: destination, owner: to, mint: mints[currency] })];
      instructions.push(withReferences);
      return send(from, instructions, version);
    },
    send,
    async lookupTable(addresses) {
      const table = (await generateKeyPairSigner()).address;
      // LookupTableMeta (56 bytes): u32 type = 1 (LookupTable), deactivation slot = u64::MAX
      // (active), last extended slot 0 (so every address is usable now), start index 0,
      // authority None, 2 bytes padding; then the addresses.
      const data = new Uint8Array(56 + 32 * addresses.length);
      const view = new DataView(data.buffer);
      view.setUint32(0, 1, true);
      view.setBigUint64(4, 0xffffffffffffffffn, true);
      addresses.forEach((address, index) => data.set(getAddressEncoder().encode(address), 56 + 32 * index));
      svm.setAccount({ address: table, data, executable: false, lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(data.length))), programAddress: 'AddressLookupTab1e1111111111111111111111111' as Address, space: BigInt(data.length) });
      return table;
    },
    async stop() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

class RpcError extends Error {
  constructor(readonly code: number, message: string) {
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

function reply(response: http.ServerResponse, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function decodeAddress(bytes: Uint8Array): string {
  return BASE58.decode(bytes);
}
