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
import { createLedger, encodeAccountInfo, type Ledger, type LedgerEntry } from './solanaRpcLedger.ts';
import { rpcMethods, RpcError } from './solanaRpcMethods.ts';

/**
 * A local Solana JSON-RPC + WebSocket server backed by litesvm (the real SPL token program), with
 * the production USDC and USDT mints installed at their mainnet addresses, so the production
 * `chains/solana.json` runs unchanged against it. It serves the JSON-RPC methods the ingester and
 * a payer use (solanaRpcMethods.ts: getSlot, getLatestBlockhash, getAccountInfo, getBalance,
 * getTokenAccountsByOwner, getSignaturesForAddress, getTransaction, getSignatureStatuses,
 * sendTransaction) and the accountSubscribe / slotSubscribe WebSocket methods.
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

/**
 * `latencyMs`: each HTTP answer waits this long, like a remote node, so a catch-up takes long
 * enough for a test to interrupt it (a batched catch-up of a few hundred payments on loopback is
 * over in one commit).
 */
export async function startSolanaRpc(params: { startSlot?: bigint; latencyMs?: number } = {}): Promise<SolanaTestRpc> {
  const ledger = createLedger({ startSlot: params.startSlot });
  const svm = ledger.svm;
  const chain = loadChains().solana;
  const mintAuthority = await generateKeyPairSigner();
  svm.airdrop(mintAuthority.address, lamports(1_000_000_000_000n));
  const mints = {} as { USDC: Address; USDT: Address };
  for (const token of chain.tokens) {
    const data = new Uint8Array(
      getMintEncoder().encode({ mintAuthority: mintAuthority.address, supply: 0n, decimals: token.decimals, isInitialized: true, freezeAuthority: null }),
    );
    svm.setAccount({
      address: token.address as Address,
      data,
      executable: false,
      lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(MINT_SPACE))),
      programAddress: TOKEN_PROGRAM_ADDRESS,
      space: BigInt(data.length),
    });
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

  const handlers = rpcMethods(ledger);

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
      if (params.latencyMs) setTimeout(() => reply(response, answer), params.latencyMs);
      else reply(response, answer);
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
        socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            method: 'slotNotification',
            params: { subscription, result: { parent: Number(ledger.slot) - 1, root: Number(ledger.finalizedSlot), slot: Number(ledger.slot) } },
          }),
        );
      } else if (entry && address && entry.writable.includes(address as Address)) {
        const value = encodeAccountInfo(svm, address as Address) ?? {
          data: ['', 'base64'],
          executable: false,
          lamports: 0,
          owner: '11111111111111111111111111111111',
          rentEpoch: 0,
          space: 0,
        };
        socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            method: 'accountNotification',
            params: { subscription, result: { context: { slot: Number(ledger.slot) }, value } },
          }),
        );
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
      const withReferences: Instruction = {
        ...transfer,
        accounts: [...transfer.accounts, ...references.map((address) => ({ address, role: AccountRole.READONLY }))],
      };
      const instructions: Instruction[] = toTokenAccount
        ? []
        : [getCreateAssociatedTokenIdempotentInstruction({ payer: from, ata: destination, owner: to, mint: mints[currency] })];
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
      svm.setAccount({
        address: table,
        data,
        executable: false,
        lamports: lamports(svm.minimumBalanceForRentExemption(BigInt(data.length))),
        programAddress: 'AddressLookupTab1e1111111111111111111111111' as Address,
        space: BigInt(data.length),
      });
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

function reply(response: http.ServerResponse, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
