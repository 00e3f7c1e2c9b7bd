import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, WALLET, useApi } from '../helpers/api.ts';
import { loadChains } from '../../src/internal/chains.ts';

const db = useTestDatabase('api_payment_options');
const { call } = useApi(db);

async function rowCounts() {
  const { rows } = await db.store.query<{ choices: number; sessions: number }>(
    'SELECT (SELECT count(*)::int FROM session_choices) AS choices, (SELECT count(*)::int FROM payment_sessions) AS sessions',
  );
  return rows[0]!;
}

const BASE_USDC = { chain: 'base', currency: 'USDC' };
const POLYGON_USDT = { chain: 'polygon', currency: 'USDT' };

/** POST /checkout/{id}/choice as the customer's agent does (no key). */
const choose = (id: string, pair: unknown) => call('POST', `/checkout/${id}/choice`, { body: pair });

describe('paymentOptions on the create routes', () => {
  test.each([
    ['an empty list', { paymentOptions: [] }, /paymentOptions/],
    ['13 entries', { paymentOptions: Array.from({ length: 13 }, () => BASE_USDC) }, /paymentOptions/],
    ['a duplicate', { paymentOptions: [BASE_USDC, BASE_USDC] }, /lists USDC on base twice/],
    ['an unknown chain', { paymentOptions: [{ chain: 'tron', currency: 'USDT' }] }, /chain/],
    ['an unknown currency', { paymentOptions: [{ chain: 'base', currency: 'DAI' }] }, /currency/],
    ['an entry with an extra field', { paymentOptions: [{ ...BASE_USDC, amount: '1' }] }, /./],
    ['an entry without currency', { paymentOptions: [{ chain: 'base' }] }, /currency/],
    ['not an array', { paymentOptions: 'base:USDC' }, /paymentOptions/],
    ['options with chain and currency', { paymentOptions: [BASE_USDC, POLYGON_USDT], chain: 'base', currency: 'USDC' }, /not both/],
    ['chain without currency', { chain: 'base' }, /go together/],
    ['options with a merchant wallet', { paymentOptions: [BASE_USDC, POLYGON_USDT], merchantWallet: WALLET }, /merchantWallet cannot be combined/],
    ['an amount a 6-decimal token cannot hold', { paymentOptions: [BASE_USDC, { chain: 'bsc', currency: 'USDC' }], amount: '1.0000001' }, /6-decimal/],
    ['address mode with a solana option', { paymentOptions: [BASE_USDC, { chain: 'solana', currency: 'USDC' }], attribution: 'address' }, /solana/],
    [
      'line items that do not add up',
      { paymentOptions: [BASE_USDC, POLYGON_USDT], lineItems: [{ name: 'Tea', quantity: 2, unitAmount: '1' }] },
      /lineItems add up to 2/,
    ],
  ])('%s is a 400 and writes nothing', async (_name, extra, message) => {
    const m = await newMerchant(db.store);
    const before = await rowCounts();
    for (const path of ['/api/v1/checkout/sessions', '/api/v1/sessions', '/api/v1/payments']) {
      const answer = await call('POST', path, { key: m.test, body: { amount: '25.00', ...extra } });
      expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(400);
      expect(answer.body.error).toMatch(message);
    }
    expect(await rowCounts()).toEqual(before);
  });

  test('a live key: a pair on a chain the merchant has no wallet on is a 400 naming it; no pair receivable at all is a 400', async () => {
    const m = await newMerchant(db.store);
    const before = await rowCounts();
    const one = await call('POST', '/api/v1/checkout/sessions', { key: m.live, body: { amount: '5', paymentOptions: [BASE_USDC, POLYGON_USDT] } });
    expect(one.status).toBe(400);
    expect(one.body.error).toMatch(/^paymentOptions: USDC on base: merchantWallet is required/);
    const none = await call('POST', '/api/v1/checkout/sessions', { key: m.live, body: { amount: '5' } });
    expect(none.status).toBe(400);
    expect(none.body.error).toMatch(/can receive no \(chain, currency\) pair in live mode/);
    expect(await rowCounts()).toEqual(before);
  });

  test('a read-only key cannot create a session with options', async () => {
    const m = await newMerchant(db.store);
    const answer = await call('POST', '/api/v1/checkout/sessions', { key: m.readOnly, body: { amount: '5', paymentOptions: [BASE_USDC, POLYGON_USDT] } });
    expect(answer.status).toBe(403);
  });

  test('single-pair bodies and one-entry options make a chosen session at once', async () => {
    const m = await newMerchant(db.store);
    const single = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body: { amount: '5', ...BASE_USDC } });
    expect(single).toMatchObject({ status: 201, body: { chain: 'base', currency: 'USDC', paymentOptions: [BASE_USDC], choice: BASE_USDC, amount: '5' } });
    const one = await call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '5', paymentOptions: [POLYGON_USDT] } });
    expect(one).toMatchObject({ status: 201, body: { chain: 'polygon', currency: 'USDT', status: 'created', choice: POLYGON_USDT } });
    // Choosing its own pair again is idempotent; another pair is not among its options.
    expect((await choose(one.body.id, POLYGON_USDT)).status).toBe(200);
    expect((await choose(one.body.id, BASE_USDC)).status).toBe(400);
  });

  test('several options: a waiting session, null pair fields, nothing reserved; the choice fixes it', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/checkout/sessions', {
      key: m.test,
      body: { amount: '25.00', paymentOptions: [BASE_USDC, POLYGON_USDT], metadata: { order: '42' }, description: 'Tea' },
    });
    expect(created).toMatchObject({
      status: 201,
      body: { status: 'pending', chain: null, currency: null, amount: null, amountDue: null, paymentAddress: null, choice: null, metadata: { order: '42' } },
    });
    expect(created.body.paymentOptions).toEqual([BASE_USDC, POLYGON_USDT]);
    const id = created.body.id as string;
    const { rows: reserved } = await db.store.query('SELECT 1 FROM payment_sessions WHERE id = $1', [id]);
    expect(reserved).toHaveLength(0);
    // Interface A reads it too (created), another merchant or mode does not.
    expect(await call('GET', `/api/v1/sessions/${id}`, { key: m.test })).toMatchObject({ status: 200, body: { status: 'created', chain: null } });
    const other = await newMerchant(db.store, 'Other');
    expect((await call('GET', `/api/v1/checkout/sessions/${id}`, { key: other.test })).status).toBe(404);
    expect((await call('GET', `/api/v1/payments/${id}`, { key: m.live })).status).toBe(404);
    // The machine-readable page lists every option with what it costs.
    const options = await call('GET', `/checkout/${id}`, { headers: { accept: 'application/json' } });
    expect(options).toMatchObject({
      status: 200,
      body: { object: 'payment_choice', view: 'choosing', chooseUrl: `https://pay.example.test/checkout/${id}/choice` },
    });
    expect(options.body.options.map((o: { chain: string; currency: string; amount: string }) => [o.chain, o.currency, o.amount])).toEqual([
      ['base', 'USDC', '25.00'],
      ['polygon', 'USDT', '25.00'],
    ]);
    // Nothing is payable before the choice: no status feed, no simulated payment.
    expect((await call('GET', `/checkout/${id}/status`)).status).toBe(404);

    expect((await choose(id, { chain: 'arbitrum', currency: 'USDC' })).status).toBe(400);
    expect((await choose(id, { chain: 'base' })).status).toBe(400);
    const chosen = await choose(id, POLYGON_USDT);
    expect(chosen).toMatchObject({ status: 200, body: { object: 'payment_instructions', id, chain: 'polygon', currency: 'USDT', amount: '25' } });
    expect(await choose(id, POLYGON_USDT)).toMatchObject({ status: 200, body: { id, chain: 'polygon' } });
    expect(await choose(id, BASE_USDC)).toMatchObject({ status: 409, body: { error: expect.stringMatching(/already chose USDT on polygon/) } });
    const read = await call('GET', `/api/v1/checkout/sessions/${id}`, { key: m.test });
    expect(read).toMatchObject({
      status: 200,
      body: {
        id,
        chain: 'polygon',
        currency: 'USDT',
        amount: '25',
        choice: POLYGON_USDT,
        paymentOptions: [BASE_USDC, POLYGON_USDT],
        metadata: { order: '42' },
      },
    });
    expect(read.body.expiresAt).toBe(created.body.expiresAt);
  });

  test('no pair given: every pair the merchant can receive in the mode (test mode: all of them)', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body: { amount: '3' } });
    expect(created.status).toBe(201);
    // Every pair chains/*.json offers by default (base's USDT is bridged: only for merchants who accept bridged tokens).
    const offered = Object.values(loadChains()).flatMap((chain) =>
      ['USDT', 'USDC']
        .filter((currency) => chain.tokens.some((token) => token.currency === currency && token.acceptedByDefault))
        .map((currency) => ({ chain: chain.name, currency })),
    );
    expect(new Set(created.body.paymentOptions.map(JSON.stringify))).toEqual(new Set(offered.map((pair) => JSON.stringify(pair))));
    expect(created.body.paymentOptions[0]).toEqual({ chain: 'polygon', currency: 'USDT' });
  });

  test('an expired waiting session refuses a choice (410); an unknown one is a 404', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body: { amount: '5', paymentOptions: [BASE_USDC, POLYGON_USDT] } });
    await db.store.query("UPDATE session_choices SET expires_at = now() - interval '1 second' WHERE id = $1", [created.body.id]);
    expect(await choose(created.body.id, BASE_USDC)).toMatchObject({ status: 410 });
    expect((await call('GET', `/api/v1/checkout/sessions/${created.body.id}`, { key: m.test })).body.status).toBe('expired');
    expect((await choose('ses_00000000000000000000', BASE_USDC)).status).toBe(404);
    const { rows } = await db.store.query('SELECT 1 FROM payment_sessions WHERE id = $1', [created.body.id]);
    expect(rows).toHaveLength(0);
  });

  test('two different choices racing: one wins, the other is a 409; the same pair twice: both get the one session', async () => {
    const m = await newMerchant(db.store);
    const body = { amount: '7', paymentOptions: [BASE_USDC, POLYGON_USDT] };
    const a = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body });
    const answers = await Promise.all([choose(a.body.id, BASE_USDC), choose(a.body.id, POLYGON_USDT)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const b = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body });
    const same = await Promise.all([choose(b.body.id, BASE_USDC), choose(b.body.id, BASE_USDC)]);
    expect(same.map((answer) => answer.status)).toEqual([200, 200]);
    expect(same[0]!.body.amountDueBaseUnits).toBe(same[1]!.body.amountDueBaseUnits);
    const { rows } = await db.store.query('SELECT count(*)::int AS n FROM payment_sessions WHERE id = ANY($1)', [[a.body.id, b.body.id]]);
    expect(rows[0]!.n).toBe(2);
  });

  test("a test-mode session's options are its mode's: a pair off its list is refused, and the chosen session stays in test mode", async () => {
    const m = await newMerchant(db.store);
    await call('POST', '/api/v1/wallets', { key: m.live, body: { chain: 'base', address: WALLET, default: true } });
    const created = await call('POST', '/api/v1/checkout/sessions', {
      key: m.test,
      body: { amount: '5', paymentOptions: [POLYGON_USDT, { chain: 'solana', currency: 'USDC' }] },
    });
    expect((await choose(created.body.id, BASE_USDC)).status).toBe(400);
    const chosen = await choose(created.body.id, POLYGON_USDT);
    expect(chosen.body.livemode).toBe(false);
    expect(chosen.body.recipient).not.toBe(WALLET);
  });
});
