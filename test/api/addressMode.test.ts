import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createClient, newMerchant, useApi, WALLET, SOLANA_WALLET, EVERY_CHAIN_LIVE } from '../helpers/api.ts';
import { MAX_LINK_RESERVATIONS_PER_PRICE, MAX_OPEN_SESSIONS_PER_LINK } from '../../src/payments/links.ts';
import { computeDepositAddress } from '../../src/internal/depositAddress.ts';
import { setMerchantPaymentSettings } from '../../src/accounts/index.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createSandbox } from '../../src/sandbox/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { loadChains } from '../../src/internal/chains.ts';

/** Address mode (issue 25) through the HTTP interfaces, payment links, checkout and the sandbox. */
const db = useTestDatabase('api_address_mode');
const api = useApi(db, { env: EVERY_CHAIN_LIVE });

const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'base', merchantWallet: WALLET, ...extra });

describe('attribution on the create routes and in both views', () => {
  test.each([
    ['/api/v1/sessions', 'created'],
    ['/api/v1/payments', 'pending'],
    ['/api/v1/checkout/sessions', 'pending'],
  ])('%s: address mode gives the session its own deposit address and the plain amount; amount mode is unchanged', async (route, status) => {
    const m = await newMerchant(db.store);
    const byAddress = await api.call('POST', route, { key: m.live, body: body({ attribution: 'address' }) });
    expect(byAddress.status).toBe(201);
    const depositAddress = computeDepositAddress({ merchantWallet: WALLET, sessionId: byAddress.body.id });
    expect(byAddress.body).toMatchObject({
      status,
      attribution: 'address',
      depositAddress,
      paymentAddress: depositAddress,
      merchantWallet: WALLET,
      amountDue: '25',
      amountDueBaseUnits: '25000000',
    });
    const byAmount = await api.call('POST', route, { key: m.live, body: body() });
    expect(byAmount.body).toMatchObject({ attribution: 'amount', depositAddress: null, paymentAddress: WALLET, merchantWallet: WALLET });
    // Read back through both interfaces: the same fields.
    for (const read of [`/api/v1/sessions/${byAddress.body.id}`, `/api/v1/payments/${byAddress.body.id}`]) {
      expect((await api.call('GET', read, { key: m.live })).body).toMatchObject({ attribution: 'address', depositAddress, paymentAddress: depositAddress });
    }
  });

  test('sessions of one price in address mode all ask for the plain amount, and amount-mode ones beside them keep theirs unique', async () => {
    const m = await newMerchant(db.store);
    const created = [];
    for (const attribution of ['address', 'address', 'amount', 'amount', 'address']) {
      created.push((await api.call('POST', '/api/v1/payments', { key: m.live, body: body({ amount: '9', attribution }) })).body);
    }
    expect(created.map((s) => s.amountDue)).toEqual(['9', '9', '9', '9.000001', '9']);
    expect(new Set(created.filter((s) => s.depositAddress).map((s) => s.depositAddress)).size).toBe(3);
  });

  test('address on solana is a 400 that says why; a bad value is a 400 from the schema', async () => {
    const m = await newMerchant(db.store);
    expect(
      await api.call('POST', '/api/v1/sessions', { key: m.live, body: body({ chain: 'solana', merchantWallet: SOLANA_WALLET, attribution: 'address' }) }),
    ).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('attribution "address" is for EVM chains only; solana sessions are identified by their Solana Pay reference') },
    });
    const bad = await api.call('POST', '/api/v1/payments', { key: m.live, body: body({ attribution: 'wallet' }) });
    expect(bad).toMatchObject({ status: 400, body: { error: expect.stringContaining('attribution') } });
    const { rows } = await db.store.query('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(0);
  });

  test("the merchant's default applies when a request does not say; on solana it means references", async () => {
    const m = await newMerchant(db.store);
    await setMerchantPaymentSettings(db.store, m.id, { defaultAttribution: 'address' });
    const evm = await api.call('POST', '/api/v1/sessions', { key: m.live, body: body() });
    expect(evm.body).toMatchObject({ attribution: 'address', paymentAddress: evm.body.depositAddress });
    const asked = await api.call('POST', '/api/v1/sessions', { key: m.live, body: body({ attribution: 'amount' }) });
    expect(asked.body).toMatchObject({ attribution: 'amount', depositAddress: null });
    const solana = await api.call('POST', '/api/v1/sessions', { key: m.live, body: body({ chain: 'solana', merchantWallet: SOLANA_WALLET }) });
    expect(solana).toMatchObject({ status: 201, body: { attribution: 'amount', depositAddress: null, reference: expect.any(String) } });
    await expect(setMerchantPaymentSettings(db.store, m.id, { defaultAttribution: 'wallet' })).rejects.toThrow('default attribution must be');
  });

  test('the checkout instructions name the deposit address, the plain amount and an EIP-681 URI to it, and offer no proof', async () => {
    const m = await newMerchant(db.store);
    const s = (await api.call('POST', '/api/v1/sessions', { key: m.live, body: body({ attribution: 'address' }) })).body;
    const page = await api.app.inject({ method: 'GET', url: `/checkout/${s.id}`, headers: { accept: 'application/json' } });
    const instructions = page.json();
    expect(instructions).toMatchObject({ recipient: s.depositAddress, attribution: 'address', amountDue: '25', proofUrl: null, proofMessage: null });
    const proof = await api.app.inject({
      method: 'POST',
      url: `/checkout/${s.id}/transactions`,
      payload: { txHash: `0x${'ab'.repeat(32)}`, signature: '0x00' },
    });
    expect(proof.statusCode).toBe(400);
    expect(proof.json().error).toBe(
      `this session has its own deposit address ${s.depositAddress}: every transfer to it counts for the session without a proof`,
    );
    expect(instructions.paymentUri).toBe(`ethereum:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913@8453/transfer?address=${s.depositAddress}&uint256=25000000`);
    const html = await api.app.inject({ method: 'GET', url: `/checkout/${s.id}`, headers: { accept: 'text/html' } });
    expect(html.body).toContain(s.depositAddress);
    expect(html.body).toContain("it is this payment's own address");
  });
});

describe('payment links in address mode', () => {
  test('a link fixes its mode (or follows the default); a flood is bounded per link with Retry-After, not by the due-amount cap', async () => {
    const m = await newMerchant(db.store);
    const link = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: body({ attribution: 'address', expiresIn: 600 }) });
    expect(link).toMatchObject({ status: 201, body: { attribution: 'address' } });
    const following = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: body() });
    expect(following.body.attribution).toBeNull();
    expect(
      (await api.call('POST', '/api/v1/payment-links', { key: m.test, body: body({ chain: 'solana', merchantWallet: SOLANA_WALLET, attribution: 'address' }) }))
        .status,
    ).toBe(400);

    // Anonymous visits to an amount-mode link at this price and wallet hold every due amount the
    // cap allows (expired, still reserved for late payments): the amount-mode link refuses, the
    // address-mode one is not bound by it.
    const byAmount = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: body({ attribution: 'amount', expiresIn: 60 }) });
    const held = /(ses_\w+)$/.exec(String((await api.call('GET', `/pay/${byAmount.body.id}`)).headers.location))![1]!;
    await db.store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
         required_confirmations, payment_link_id, expires_at, monitor_until)
       SELECT id || '_' || k, merchant_id, livemode, 'expired', chain, currency, decimals, amount, amount + k, fee, token_addresses, pay_to,
         required_confirmations, payment_link_id, now() - interval '1 second', monitor_until
         FROM payment_sessions, generate_series(1, $2::int) AS k WHERE id = $1`,
      [held, MAX_LINK_RESERVATIONS_PER_PRICE],
    );
    expect((await api.call('GET', `/pay/${byAmount.body.id}`)).status).toBe(429);

    // Sessions already open from the link, one short of the per-link bound (made in SQL: what
    // that many visits would have written), then visits until the bound refuses.
    const first = await api.call('GET', `/pay/${link.body.id}`);
    expect(first.status).toBe(303);
    const sessionId = /(ses_\w+)$/.exec(String(first.headers.location))![1]!;
    expect((await api.call('GET', `/api/v1/payments/${sessionId}`, { key: m.test })).body).toMatchObject({ attribution: 'address', amountDue: '25' });
    await db.store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
         required_confirmations, payment_link_id, expires_at, monitor_until, attribution, deposit_address)
       SELECT id || '_' || k, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
         required_confirmations, payment_link_id, expires_at, monitor_until, attribution, deposit_address || k
         FROM payment_sessions, generate_series(1, $2::int - 2) AS k WHERE id = $1`,
      [sessionId, MAX_OPEN_SESSIONS_PER_LINK],
    );
    expect((await api.call('GET', `/pay/${link.body.id}`)).status).toBe(303);
    const refused = await api.call('GET', `/pay/${link.body.id}`);
    expect(refused).toMatchObject({ status: 429, body: { error: expect.stringContaining('too many checkouts of this payment link are open and unpaid') } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    // None of the address-mode sessions holds a due amount: the merchant's own amount-mode session
    // takes the next one above the reservations.
    const own = await api.call('POST', '/api/v1/payments', { key: m.test, body: body() });
    expect(own.body.amountDue).toBe('25.001001');
  });
});

describe('sandbox address mode', () => {
  test('a simulated payment to the deposit address confirms the session through the same engine, by address', async () => {
    const m = await newMerchant(db.store);
    const logger = createLogger({ level: 'silent' });
    const engine = createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), config: { monitorWindowSeconds: 3600 } });
    const sandbox = createSandbox({ store: db.store, logger, chains: loadChains(), blockMs: 10, reconcile: async (p) => void (await engine.reconcile(p)) });
    const s = (await api.call('POST', '/api/v1/payments', { key: m.test, body: body({ attribution: 'address', merchantWallet: undefined }) })).body;
    expect(s).toMatchObject({ attribution: 'address', livemode: false, paymentAddress: s.depositAddress });
    const paid = await sandbox.pay({ merchantId: m.id, sessionId: s.id, outcome: 'exact' });
    const deadline = Date.now() + 20_000;
    let status = '';
    while (Date.now() < deadline && status !== 'settled') {
      await sandbox.tick();
      status = (await db.store.query('SELECT status FROM payment_sessions WHERE id = $1', [s.id])).rows[0]!.status;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status).toBe('settled');
    const { rows } = await db.store.query('SELECT to_address, match_method, reference_keys FROM transfers WHERE tx_hash = $1', [paid.txHash]);
    expect(rows).toEqual([{ to_address: s.depositAddress, match_method: 'address', reference_keys: [] }]);

    // The sweep moves the deposit into the merchant's wallet through the same engine: marked
    // `sweep`, paying no session (not even an amount-mode session of that price on the wallet).
    const sameWallet = (await api.call('POST', '/api/v1/payments', { key: m.test, body: body({ merchantWallet: undefined }) })).body;
    await db.store.query('UPDATE payment_sessions SET amount_due = 25000000 WHERE id = $1', [sameWallet.id]);
    // The API as the daemon wires it with its sandbox.
    const withSandbox = buildApi(db.store, { env: EVERY_CHAIN_LIVE, sandbox });
    await withSandbox.ready();
    const call = createClient(withSandbox);
    const swept = await call('POST', `/api/v1/sandbox/sessions/${s.id}/sweep`, { key: m.test });
    expect(swept).toMatchObject({
      status: 200,
      body: { sessionId: s.id, from: s.depositAddress, to: s.merchantWallet, amount: '25', amountBaseUnits: '25000000', livemode: false },
    });
    const { rows: sweep } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [swept.body.txHash]);
    expect(sweep).toEqual([{ session_id: null, match_method: 'sweep' }]);
    expect((await db.store.query('SELECT status FROM payment_sessions WHERE id = $1', [sameWallet.id])).rows[0]!.status).toBe('created');
    // Swept once: nothing left; an amount-mode session has nothing to sweep; a live key is refused.
    expect((await call('POST', `/api/v1/sandbox/sessions/${s.id}/sweep`, { key: m.test })).body.error).toMatch(/holds nothing to sweep/);
    expect((await call('POST', `/api/v1/sandbox/sessions/${sameWallet.id}/sweep`, { key: m.test })).status).toBe(409);
    expect((await call('POST', `/api/v1/sandbox/sessions/${s.id}/sweep`, { key: m.live })).status).toBe(403);
    await withSandbox.close();
  });

  test('a deposit that has not confirmed is not swept (409)', async () => {
    const m = await newMerchant(db.store);
    const s = (await api.call('POST', '/api/v1/payments', { key: m.test, body: body({ attribution: 'address', merchantWallet: undefined }) })).body;
    const logger = createLogger({ level: 'silent' });
    const sandbox = createSandbox({ store: db.store, logger, chains: loadChains(), blockMs: 10, reconcile: async () => {} });
    await expect(sandbox.sweep({ merchantId: m.id, sessionId: s.id })).rejects.toThrow(/is created: deposits are swept once they are confirmed/);
  });
});
