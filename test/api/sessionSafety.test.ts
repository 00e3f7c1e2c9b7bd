import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { CHAIN_NAMES } from '../../src/internal/config.ts';
import { buildApi, createClient, newMerchant, SOLANA_WALLET } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';

/**
 * Session creation must never set a payer up to lose money: no live session on a chain nobody
 * watches, no payment link no visit could pay, no burn address as the receiving wallet, and no
 * sandbox session whose instructions could move real money or reach the merchant's real wallet.
 */
const db = useTestDatabase('api_session_safety');
const chains = loadChains();
const POLYGON_USDC = chains.polygon.tokens.find((t) => t.symbol === 'USDC')!.address;
const POLYGON_USDC_E = chains.polygon.tokens.find((t) => t.symbol === 'USDC.e')!.address;
const SOLANA_USDC = chains.solana.tokens.find((t) => t.symbol === 'USDC')!.address;

/** RPC URLs for `live` chains only; the others run sandbox-only. */
const rpcEnv = (live: readonly string[]) =>
  Object.fromEntries(CHAIN_NAMES.map((chain) => [`SVC_${chain.toUpperCase()}_RPC_URL`, live.includes(chain) ? `http://rpc.invalid/${chain}` : '']));

let everyChain: ReturnType<typeof buildApi>;
let polygonOnly: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createClient>;
let callPolygonOnly: ReturnType<typeof createClient>;

beforeAll(async () => {
  everyChain = buildApi(db.store, { env: rpcEnv(CHAIN_NAMES) });
  polygonOnly = buildApi(db.store, { env: rpcEnv(['polygon']) });
  await Promise.all([everyChain.ready(), polygonOnly.ready()]);
  call = createClient(everyChain, await createOpenApiChecker(everyChain));
  callPolygonOnly = createClient(polygonOnly, await createOpenApiChecker(polygonOnly));
});
afterAll(async () => {
  await everyChain?.close();
  await polygonOnly?.close();
});

const OWN = '0x976EA74026E726554dB657fA54763abd0C3a0aa9';
const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'base', merchantWallet: OWN, ...extra });

/** Rows a refused request must not have written for merchant `id`. */
async function written(id: string) {
  const count = async (table: string) =>
    (await db.store.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE merchant_id = $1`, [id])).rows[0]!.n;
  return { sessions: await count('payment_sessions'), links: await count('payment_links'), wallets: await count('wallets') };
}
const NOTHING = { sessions: 0, links: 0, wallets: 0 };

describe('live sessions only on chains the gateway watches', () => {
  const refusal =
    'base is not watched by this gateway in live mode (no SVC_BASE_RPC_URL is configured), so a payment there would never be detected; use a test key, or ask the operator to configure the chain';

  test('a live session on a chain without an RPC URL is a 409 on every create route and writes nothing; test keys and watched chains work', async () => {
    const m = await newMerchant(db.store);
    for (const url of ['/api/v1/sessions', '/api/v1/payments', '/v1/checkout/sessions']) {
      expect(await callPolygonOnly('POST', url, { key: m.live, body: body() })).toMatchObject({ status: 409, body: { error: refusal } });
    }
    expect(await written(m.id)).toEqual(NOTHING);
    expect((await callPolygonOnly('POST', '/api/v1/sessions', { key: m.test, body: body() })).status).toBe(201);
    expect((await callPolygonOnly('POST', '/api/v1/sessions', { key: m.live, body: body({ chain: 'polygon' }) })).status).toBe(201);
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: body() })).status).toBe(201);
  });

  test('a live payment link on such a chain is a 409 at creation; a link whose chain stopped being watched refuses visits (409) and creates no session', async () => {
    const m = await newMerchant(db.store);
    expect(await callPolygonOnly('POST', '/api/v1/payment-links', { key: m.live, body: body() })).toMatchObject({ status: 409, body: { error: refusal } });
    expect(await written(m.id)).toEqual(NOTHING);
    expect((await callPolygonOnly('POST', '/api/v1/payment-links', { key: m.test, body: body() })).status).toBe(201);

    const link = await call('POST', '/api/v1/payment-links', { key: m.live, body: body() });
    expect(link.status).toBe(201);
    const visit = await polygonOnly.inject({ method: 'GET', url: `/pay/${link.body.id}` });
    expect(visit.statusCode).toBe(409);
    expect(visit.json()).toEqual({ error: refusal });
    expect((await written(m.id)).sessions).toBe(0);
    expect((await everyChain.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
  });

  test('GET /currencies says per chain whether it is live here', async () => {
    const m = await newMerchant(db.store);
    for (const key of [m.live, m.test]) {
      const { status, body: answer } = await callPolygonOnly('GET', '/api/v1/currencies', { key });
      expect(status).toBe(200);
      const live = Object.fromEntries(
        answer.data.map((entry: { chain: string; currency: string; live: boolean }) => [`${entry.currency}/${entry.chain}`, entry.live]),
      );
      expect(live).toMatchObject({ 'USDC/polygon': true, 'USDT/polygon': true, 'USDC/base': false, 'USDC/solana': false });
    }
    const all = await call('GET', '/api/v1/currencies', { key: m.live });
    expect(all.body.data.every((entry: { live: boolean }) => entry.live)).toBe(true);
  });
});

describe('payment links are checked like payments', () => {
  test('a currency the merchant cannot accept on the chain (bridged only) is a 400 at link creation, with the payment message, and writes nothing', async () => {
    const m = await newMerchant(db.store);
    const usdtOnBase = body({ currency: 'USDT' });
    const payment = await call('POST', '/api/v1/payments', { key: m.test, body: usdtOnBase });
    expect(payment).toMatchObject({ status: 400, body: { error: 'USDT on base is only offered as a bridged token, which this merchant has not enabled' } });
    for (const key of [m.test, m.live]) {
      expect(await call('POST', '/api/v1/payment-links', { key, body: usdtOnBase })).toMatchObject({ status: 400, body: payment.body });
    }
    expect(await written(m.id)).toEqual(NOTHING);
    await db.store.query('UPDATE merchants SET accept_bridged_tokens = true WHERE id = $1', [m.id]);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: usdtOnBase });
    expect(link.status).toBe(201);
    expect((await everyChain.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
  });
});

describe('receiving wallets that would burn the payment are refused', () => {
  const cases: [chain: string, address: string, reason: string][] = [
    ['polygon', '0x0000000000000000000000000000000000000000', 'is the zero address (tokens sent there are burned)'],
    ['polygon', '0x000000000000000000000000000000000000dEaD', 'is the 0x…dEaD burn address'],
    ['polygon', POLYGON_USDC.toLowerCase(), 'is the USDC token contract itself'],
    ['polygon', POLYGON_USDC_E, 'is the USDC.e token contract itself'],
    // A sandbox address pasted from a test response (every fake EVM value starts 0x5a4db0c5).
    ['base', '0x5a4dB0C5bE9F7032d0eF3f59C894b956386265CA', 'is a sandbox address (0x5a4db0c5…, from a test response), which nobody controls'],
    ['solana', '11111111111111111111111111111111', 'is the System Program, not a wallet'],
    ['solana', SOLANA_USDC, 'is the USDC mint itself, not a wallet'],
    ['solana', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'is the SPL Token program, not a wallet'],
    ['solana', '1nc1nerator11111111111111111111111111111111', 'is the incinerator'],
  ];

  test('as merchantWallet of a live or sandbox session or link: 400 naming the field and why, nothing written', async () => {
    const m = await newMerchant(db.store);
    for (const [chain, address, reason] of cases) {
      for (const key of [m.live, m.test]) {
        for (const url of ['/api/v1/sessions', '/api/v1/payment-links']) {
          const answer = await call('POST', url, { key, body: body({ chain, merchantWallet: address }) });
          expect(answer.status, `${url} ${chain} ${address}`).toBe(400);
          expect(answer.body.error).toMatch(
            new RegExp(`^merchantWallet \\S+ ${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.* on ${chain}: funds sent there cannot be spent`),
          );
        }
      }
    }
    expect(await written(m.id)).toEqual(NOTHING);
    // Ordinary wallets still work.
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: body({ chain: 'solana', merchantWallet: SOLANA_WALLET }) })).status).toBe(201);
  });

  test('as a wallet to verify: 400 at the challenge, and addWallet refuses it too', async () => {
    const m = await newMerchant(db.store);
    for (const [chain, address, reason] of cases) {
      const answer = await call('POST', '/api/v1/wallets/challenges', { key: m.live, body: { chain, address } });
      expect(answer.status, `${chain} ${address}`).toBe(400);
      expect(answer.body.error).toContain(reason);
      expect(answer.body.error).toMatch(/^address /);
    }
    await expect(
      addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: '0x0000000000000000000000000000000000000000', verifiedBy: 'operator' }),
    ).rejects.toThrow(/zero address/);
    expect(await written(m.id)).toEqual(NOTHING);
  });
});

describe('sandbox sessions never route real money', () => {
  test("a sandbox session pays to the merchant's sandbox address, never to the wallet given or a verified one; live sessions use them", async () => {
    const m = await newMerchant(db.store);
    const inline = await call('POST', '/api/v1/payments', { key: m.test, body: body({ chain: 'polygon' }) });
    expect(inline.status).toBe(201);
    expect(inline.body).toMatchObject({ paymentAddress: sandboxWallet('polygon', m.id), merchantWallet: sandboxWallet('polygon', m.id) });
    // The given wallet is still checked.
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: body({ chain: 'polygon', merchantWallet: '0x1234' }) })).status).toBe(400);

    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OWN, verifiedBy: 'operator', makeDefault: true });
    const { merchantWallet: _w, ...noWallet } = body({ chain: 'polygon' });
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: noWallet })).body.paymentAddress).toBe(sandboxWallet('polygon', m.id));
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.paymentAddress).toBe(OWN);
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: body({ chain: 'polygon' }) })).body.paymentAddress).toBe(OWN);
  });

  test('due amounts are unique across modes: a live session never asks for what a sandbox session on the same address holds', async () => {
    const m = await newMerchant(db.store);
    const wallet = '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955';
    // A sandbox session paying to a real address (as sandbox sessions did before they always used the sandbox address).
    await db.store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
       VALUES ('ses_legacySandbox0001', $1, false, 'polygon', 'USDC', 6, 5000000, 5000000, 50000, ARRAY[$2], $3, 32, now() + interval '1 hour', now() + interval '2 hours')`,
      [m.id, POLYGON_USDC, wallet],
    );
    const live = await call('POST', '/api/v1/sessions', { key: m.live, body: body({ chain: 'polygon', amount: '5', merchantWallet: wallet }) });
    expect(live.body.amountDueBaseUnits).toBe('5000001');
  });
});
