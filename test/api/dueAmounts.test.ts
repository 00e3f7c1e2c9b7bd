import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { countSessions, buildApi, createClient, newMerchant, WALLET, useApi } from '../helpers/api.ts';
import { createStore } from '../../src/store/index.ts';

/**
 * Unique due amounts: sessions asking the same amount on one wallet get distinct, gap-free due
 * amounts, under concurrency and across API processes; freed when monitoring ends; a 409 when
 * every offset below one cent is taken.
 */
const db = useTestDatabase('api_due_amounts');
const api = useApi(db);
const { call } = api;

const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...extra });

const sessionsOf = (merchantId: string) => countSessions(db.store, merchantId);

describe('unique due amounts', () => {
  test('sessions asking the same amount on one wallet get amount, +1, +2 base units; another currency or wallet starts again', async () => {
    const m = await newMerchant(db.store);
    // A wallet of this test alone (WALLET is verified by another merchant of this file, which a
    // live session of this one may not use).
    const own = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
    const dues = [];
    for (let i = 0; i < 3; i++)
      dues.push((await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', merchantWallet: own }) })).body.amountDueBaseUnits);
    expect(dues).toEqual(['5000000', '5000001', '5000002']);
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', currency: 'USDT', merchantWallet: own }) })).body.amountDueBaseUnits,
    ).toBe('5000000');
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', merchantWallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' }) })).body
        .amountDueBaseUnits,
    ).toBe('5000000');
    // Sandbox sessions pay to the sandbox address whatever merchantWallet says, so they start again there.
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '5', merchantWallet: own }) })).body.amountDueBaseUnits).toBe('5000000');
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '5', merchantWallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' }) })).body
        .amountDueBaseUnits,
    ).toBe('5000001');
  });

  test('concurrent creations never share a due amount', async () => {
    const m = await newMerchant(db.store);
    const answers = await Promise.all(Array.from({ length: 16 }, () => call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '7' }) })));
    expect(answers.every((answer) => answer.status === 201)).toBe(true);
    const dues = answers.map((answer) => BigInt(answer.body.amountDueBaseUnits)).sort((a, b) => (a < b ? -1 : 1));
    expect(dues).toEqual(Array.from({ length: 16 }, (_, i) => 7_000_000n + BigInt(i)));
  });

  test('concurrent creations of neighbouring amounts (less than a cent apart) never share a due amount', async () => {
    const m = await newMerchant(db.store);
    // 6.9999 .. 7.0003 overlap each other's offset ranges across a bucket boundary.
    const amounts = ['6.9999', '7', '7.0001', '6.9999', '7', '7.0001', '7.0002', '6.99995', '7.00005', '7'];
    const answers = await Promise.all(amounts.map((amount) => call('POST', '/api/v1/payments', { key: m.test, body: body({ amount, chain: 'optimism' }) })));
    expect(answers.every((answer) => answer.status === 201)).toBe(true);
    const dues = answers.map((answer) => answer.body.amountDueBaseUnits);
    expect(new Set(dues).size).toBe(amounts.length);
    for (const [i, answer] of answers.entries()) {
      const offset = BigInt(answer.body.amountDueBaseUnits) - BigInt(Math.round(Number(amounts[i]) * 1e6));
      expect(offset >= 0n && offset < 10_000n).toBe(true);
    }
  });

  test('two API processes (each with its own database pool) creating on one wallet at once never share a due amount', async () => {
    const m = await newMerchant(db.store);
    const secondStore = createStore({ connectionString: db.connectionString, max: 5 });
    const secondApi = buildApi(secondStore);
    try {
      await secondApi.ready();
      const second = createClient(secondApi);
      // One price and a neighbour less than a cent above it, sent alternately through both processes.
      const amounts = Array.from({ length: 24 }, (_, i) => (i % 3 === 0 ? '3.0001' : '3'));
      const answers = await Promise.all(
        amounts.map((amount, i) => (i % 2 === 0 ? call : second)('POST', '/api/v1/payments', { key: m.test, body: body({ amount, chain: 'base' }) })),
      );
      expect(answers.map((answer) => answer.status)).toEqual(amounts.map(() => 201));
      const dues = answers.map((answer) => BigInt(answer.body.amountDueBaseUnits));
      expect(new Set(dues).size).toBe(amounts.length);
      for (const [i, due] of dues.entries()) {
        const offset = due - BigInt(Math.round(Number(amounts[i]) * 1e6));
        expect(offset >= 0n && offset < 10_000n).toBe(true);
      }
      // 3.0001 USDC's range is inside 3 USDC's, so 3 USDC may pick above 3.0001's amounts; but
      // 3.0001 USDC's own range holds only amounts taken one above the other: no gap.
      const sorted = (values: bigint[]) => [...values].sort((a, b) => (a < b ? -1 : 1));
      expect(sorted(dues.filter((due) => due >= 3_000_100n))[0]).toBe(3_000_100n);
    } finally {
      await secondApi.close();
      await secondStore.close();
    }
  });

  test('the due amount is one above the highest held; the first free one only once that reaches one cent', async () => {
    const m = await newMerchant(db.store);
    const hold = (offsets: number[]) =>
      db.store.query(
        `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
         SELECT 'ses_hold' || k, $1, false, 'polygon', 'USDC', 6, 7000000, 7000000 + k, 70000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'], $2, 32, now() + interval '1 hour', now() + interval '2 hours'
         FROM unnest($3::int[]) AS k`,
        [m.id, sandboxWallet('polygon', m.id), offsets],
      );
    const create = async () => (await call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '7', chain: 'polygon' }) })).body.amountDueBaseUnits;
    await hold([0, 1, 3]);
    expect(await create()).toBe('7000004');
    await hold([9999]);
    // The top is taken: the gap at 2, then the one at 5 (4 was just taken).
    expect(await create()).toBe('7000002');
    expect(await create()).toBe('7000005');
  });

  test('a reservation whose monitoring window closed frees its due amount', async () => {
    const m = await newMerchant(db.store);
    const first = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '8' }) });
    await db.store.query(`UPDATE payment_sessions SET expires_at = now() - interval '2 days', monitor_until = now() - interval '1 second' WHERE id = $1`, [
      first.body.id,
    ]);
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '8' }) })).body.amountDueBaseUnits).toBe('8000000');
  });

  test('when all offsets below one cent are taken, creation is a 409 that writes nothing', async () => {
    const m = await newMerchant(db.store);
    // 10,000 open reservations for 9 USDC (offsets 0..9999 at 6 decimals).
    await db.store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
       SELECT 'ses_fill' || k, $1, false, 'polygon', 'USDC', 6, 9000000, 9000000 + k, 90000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'], $2, 32, now() + interval '1 hour', now() + interval '2 hours'
       FROM generate_series(0, 9999) AS k`,
      [m.id, sandboxWallet('polygon', m.id)],
    );
    const before = await sessionsOf(m.id);
    const refused = await call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '9' }) });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/^too many open sessions ask for USDC amount 9000000 base units on polygon/);
    expect(await sessionsOf(m.id)).toBe(before);
  });
});
