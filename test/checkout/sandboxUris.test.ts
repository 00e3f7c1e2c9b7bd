import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { sandboxSolanaMint, sandboxToken } from '../../src/checkout/uris.ts';
import { buildApi, createClient, newMerchant, SOLANA_WALLET } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';

/**
 * A sandbox session's wallet link, QR code and JSON instructions must not be payable with real
 * money: EVM ones name the chain's public test network, Solana Pay ones a mint that exists on no
 * cluster, and all of them the merchant's sandbox address.
 */
const db = useTestDatabase('checkout_sandbox_uris');
const chains = loadChains();
const POLYGON_USDC = chains.polygon.tokens.find((t) => t.symbol === 'USDC')!.address;
const SOLANA_USDC = chains.solana.tokens.find((t) => t.symbol === 'USDC')!.address;

let everyChain: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createClient>;

beforeAll(async () => {
  everyChain = buildApi(db.store);
  await everyChain.ready();
  call = createClient(everyChain, await createOpenApiChecker(everyChain));
});
afterAll(() => everyChain?.close());

const OWN = '0x976EA74026E726554dB657fA54763abd0C3a0aa9';
const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'base', merchantWallet: OWN, ...extra });

describe('sandbox payment instructions cannot move real money', () => {
  test("sandbox wallet links and instructions name each chain's test network; live ones the mainnet", async () => {
    const m = await newMerchant(db.store);
    const testnets = { polygon: 80002, base: 84532, bsc: 97, arbitrum: 421614, optimism: 11155420 } as const;
    const instructions = async (id: string) =>
      (await everyChain.inject({ method: 'GET', url: `/checkout/${id}`, headers: { accept: 'application/json' } })).json();
    for (const [chain, testnet] of Object.entries(testnets)) {
      const created = await call('POST', '/api/v1/payments', { key: m.test, body: body({ chain, amount: '3' }) });
      const sandbox = await instructions(created.body.id);
      expect(sandbox.chainId, chain).toBe(testnet);
      // The token is a fake contract (no code on any network), in the URI and the JSON alike.
      const fakeToken = sandboxToken(chains[chain as 'base'], chains[chain as 'base'].tokens.find((t) => t.symbol === 'USDC')!.address);
      expect(fakeToken).toMatch(/^0x5a4db0c5/i);
      expect(sandbox.token.address).toBe(fakeToken);
      expect(sandbox.paymentUri).toBe(
        `ethereum:${fakeToken}@${testnet}/transfer?address=${sandboxWallet(chain as 'base', m.id)}&uint256=${sandbox.amountDueBaseUnits}`,
      );
      const qr = await everyChain.inject({ method: 'GET', url: `/checkout/${created.body.id}/qr.svg` });
      expect(qr.body).toContain(`@${testnet}/transfer`);
    }
    const wallet = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';
    const live = await instructions(
      (await call('POST', '/api/v1/payments', { key: m.live, body: body({ chain: 'polygon', merchantWallet: wallet }) })).body.id,
    );
    expect(live.chainId).toBe(137);
    expect(live.paymentUri).toBe(`ethereum:${POLYGON_USDC}@137/transfer?address=${wallet}&uint256=25000000`);
    expect(live.token.address).toBe(POLYGON_USDC);
  });

  test('sandbox Solana Pay links name a mint that exists nowhere, so no wallet can pay them; live ones the real mint', async () => {
    const m = await newMerchant(db.store);
    const instructions = async (key: string) => {
      const created = await call('POST', '/api/v1/payments', { key, body: body({ chain: 'solana', merchantWallet: SOLANA_WALLET }) });
      return (await everyChain.inject({ method: 'GET', url: `/checkout/${created.body.id}`, headers: { accept: 'application/json' } })).json();
    };
    const sandbox = await instructions(m.test);
    const uri = new URL(sandbox.paymentUri);
    expect(sandbox.chainId).toBe('devnet');
    expect(uri.pathname).toBe(sandboxWallet('solana', m.id));
    expect(uri.searchParams.get('spl-token')).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(chains.solana.tokens.map((t) => t.address)).not.toContain(uri.searchParams.get('spl-token'));
    expect(uri.searchParams.get('spl-token')).toBe(sandboxSolanaMint(SOLANA_USDC));
    // The JSON names the same fake mint: a transfer built from the fields cannot move real USDC either.
    expect(sandbox.token.address).toBe(sandboxSolanaMint(SOLANA_USDC));
    expect(sandbox.acceptedTokens.map((t: { address: string }) => t.address)).toEqual([sandboxSolanaMint(SOLANA_USDC)]);
    const live = await instructions(m.live);
    expect(live.chainId).toBe('mainnet-beta');
    expect(new URL(live.paymentUri).searchParams.get('spl-token')).toBe(SOLANA_USDC);
    expect(new URL(live.paymentUri).pathname).toBe(SOLANA_WALLET);
  });
});
