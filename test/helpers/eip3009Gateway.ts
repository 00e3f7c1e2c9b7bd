import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { parseSignature, type Address, type Hex } from 'viem';
import { useTestDatabase } from './db.ts';
import { startAnvil, type Anvil } from './anvil.ts';
import { installEip3009Token } from './eip3009Token.ts';
import { box, GENEROUS_LIMITS, newMerchant } from './api.ts';
import { newEvmWallet } from './engine.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/authorization.ts';
import { EIP3009_ABI } from '../../src/x402/relayer.ts';

/**
 * The gateway of the x402 refusal files (refusals*.anvil.test.ts): anvil as polygon with the
 * EIP-3009 token at the real USDC address, a payer holding 100 USDC, a gas-only relayer key, x402
 * behind the HTTP server, a merchant with a fresh wallet; no ingester (nothing there needs the
 * engine). Hand-signed EIP-3009 payment headers with whatever a case changes, and the counts of
 * what was written. `started()` gives the parts made in `beforeAll`.
 */

/** The chain of the refusal files. */
export const chain = 'polygon' as const;
/** USDC's real address on polygon, where the EIP-3009 test token is installed. */
export const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';

/** An EIP-3009 `TransferWithAuthorization`. */
export interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** A fresh random EIP-3009 nonce. */
export const newNonce = () => `0x${randomBytes(32).toString('hex')}` as Hex;
/** Now in unix seconds. */
export const now = () => BigInt(Math.floor(Date.now() / 1000));

/** Starts the gateway for one file (its own database `dbName`) in `beforeAll`, stops it in `afterAll`. */
export function useEip3009Gateway(dbName: string) {
  const db = useTestDatabase(dbName);
  const payer = privateKeyToAccount(generatePrivateKey());
  const stranger = privateKeyToAccount(generatePrivateKey());
  const relayerKey = generatePrivateKey();
  let anvil: Anvil;
  let app: ReturnType<typeof createHttp>;
  let baseUrl: string;
  let merchant: Awaited<ReturnType<typeof newMerchant>>;
  let wallet: Address;

  beforeAll(async () => {
    anvil = await startAnvil({ chain });
    await installEip3009Token(anvil, USDC, 6);
    await anvil.waitMined(await anvil.mint(USDC, payer.address, 100_000_000n));
    await anvil.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 18n });
    const config = loadConfig({
      SVC_POLYGON_RPC_URL: anvil.rpcUrl,
      SVC_POLYGON_RELAYER_KEY: relayerKey,
      SVC_PUBLIC_URL: 'http://127.0.0.1:1',
      LOG_LEVEL: 'silent',
    });
    const logger = createLogger({ level: 'silent' });
    const metrics = createMetricsRegistry({ defaultMetrics: false });
    const x402 = createX402({ store: db.store, logger, metrics, config, pollMs: 100 });
    app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
    baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    merchant = await newMerchant(db.store, 'Careful Shop');
    wallet = newEvmWallet() as Address;
    await addWallet(db.store, { merchantId: merchant.id, chain, address: wallet, verifiedBy: 'operator' });
  });

  afterAll(async () => {
    await app?.close();
    await anvil?.stop();
  });

  async function createSession(amount: string): Promise<{ id: string; amountDueBaseUnits: string }> {
    const response = await fetch(`${baseUrl}/api/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${merchant.live}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount, currency: 'USDC', chain, merchantWallet: wallet }),
    });
    expect(response.status).toBe(201);
    return response.json() as Promise<{ id: string; amountDueBaseUnits: string }>;
  }

  async function sign(authorization: Authorization, signer: PrivateKeyAccount = payer, chainId = 137): Promise<Hex> {
    return signer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId, verifyingContract: USDC },
      types: TRANSFER_WITH_AUTHORIZATION_TYPES,
      primaryType: 'TransferWithAuthorization',
      message: authorization,
    });
  }

  /** A v2 PAYMENT-SIGNATURE header as @x402/evm writes it, with whatever the case changes. */
  async function paymentHeader(
    session: { amountDueBaseUnits: string },
    change: { authorization?: Partial<Authorization>; network?: string; signer?: PrivateKeyAccount; chainId?: number } = {},
  ) {
    const authorization: Authorization = {
      from: payer.address,
      to: wallet,
      value: BigInt(session.amountDueBaseUnits),
      validAfter: 0n,
      validBefore: now() + 120n,
      nonce: newNonce(),
      ...change.authorization,
    };
    const signature = await sign(authorization, change.signer, change.chainId);
    const network = change.network ?? 'eip155:137';
    const payload = {
      x402Version: 2,
      accepted: {
        scheme: 'exact',
        network,
        amount: session.amountDueBaseUnits,
        asset: USDC,
        payTo: wallet,
        maxTimeoutSeconds: 300,
        extra: { name: 'USD Coin', version: '2' },
      },
      payload: {
        signature,
        authorization: Object.fromEntries(Object.entries(authorization).map(([key, value]) => [key, typeof value === 'bigint' ? value.toString() : value])),
      },
    };
    return { 'payment-signature': Buffer.from(JSON.stringify(payload)).toString('base64'), authorization, signature };
  }

  /** Uses `nonce` of the payer on the token directly (as another facilitator would), for 1 base unit. */
  async function useNonceOnChain(nonce: Hex): Promise<void> {
    const authorization: Authorization = { from: payer.address, to: stranger.address, value: 1n, validAfter: 0n, validBefore: now() + 600n, nonce };
    const { v, r, s } = parseSignature(await sign(authorization));
    const [account] = await anvil.client.getAddresses();
    const hash = await anvil.client.writeContract({
      account: account!,
      chain: anvil.client.chain,
      address: USDC,
      abi: EIP3009_ABI,
      functionName: 'transferWithAuthorization',
      args: [authorization.from, authorization.to, authorization.value, authorization.validAfter, authorization.validBefore, nonce, Number(v), r, s],
    });
    await anvil.waitMined(hash);
  }

  /**
   * Sends `authorization` with `signature` to the token directly from `account` with a tip far
   * above the relayer's, as a mempool watcher front-running it would; returns the hash.
   */
  async function frontRun(account: Address, authorization: Authorization, signature: Hex): Promise<Hex> {
    const { v, r, s } = parseSignature(signature);
    const a = authorization;
    return anvil.client.writeContract({
      account,
      chain: anvil.client.chain,
      address: USDC,
      abi: EIP3009_ABI,
      functionName: 'transferWithAuthorization',
      args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s],
      maxPriorityFeePerGas: 100_000_000_000n,
      maxFeePerGas: 200_000_000_000n,
    });
  }

  const count = async (sql: string) => Number((await db.store.query(sql)).rows[0]!.n);
  const settlementRowsOf = (sessionId: string) => count(`SELECT count(*)::int AS n FROM x402_settlements WHERE session_id = '${sessionId}'`);
  /**
   * Whether the session's relayer transaction is recorded as submitted and already in anvil's pool
   * (it is recorded before it is broadcast: a test that races it must wait for both).
   */
  async function relayerTransactionPending(sessionId: string): Promise<boolean> {
    const { rows } = await db.store.query<{ tx_hash: Hex }>(`SELECT tx_hash FROM x402_settlements WHERE session_id = $1 AND status = 'submitted'`, [sessionId]);
    if (!rows[0]) return false;
    return anvil.client.getTransaction({ hash: rows[0].tx_hash }).then(
      () => true,
      () => false,
    );
  }
  const settlementRows = () => count('SELECT count(*)::int AS n FROM x402_settlements');

  return {
    db,
    payer,
    stranger,
    relayerKey,
    /** The parts made in `beforeAll` (call it in a later `beforeAll` or in a test). */
    started: () => ({ anvil, baseUrl, merchant, wallet }),
    createSession,
    sign,
    paymentHeader,
    useNonceOnChain,
    frontRun,
    count,
    settlementRowsOf,
    relayerTransactionPending,
    settlementRows,
  };
}
