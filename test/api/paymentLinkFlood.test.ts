import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { MAX_LINK_RESERVATIONS_PER_PRICE, MAX_OPEN_SESSIONS_PER_LINK } from '../../src/payments/links.ts';
import { dueOffsetBound } from '../../src/payments/dueAmounts.ts';
import { newMerchant, useApi, WALLET, type Answer } from '../helpers/api.ts';

const db = useTestDatabase('api_link_flood');
const api = useApi(db);

const payment = (extra: Record<string, unknown> = {}) => ({ amount: '7', currency: 'USDC', chain: 'base', merchantWallet: WALLET, ...extra });

/**
 * `count - 1` more sessions like `sessionId` (same merchant, price, wallet, link and windows), each
 * with the next free due amounts above it: what that many earlier requests would have written,
 * without the minutes it takes to make thousands of them over HTTP.
 */
const copiesOf = (sessionId: string, count: number, from: number) =>
  db.store.query(
    `INSERT INTO payment_sessions (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to,
       required_confirmations, payment_link_id, expires_at, monitor_until)
     SELECT id || '_' || k, merchant_id, livemode, status, chain, currency, decimals, amount, amount + k, fee, token_addresses, pay_to,
       required_confirmations, payment_link_id, expires_at, monitor_until
       FROM payment_sessions, generate_series($3::int, $3::int + $2::int - 2) AS k WHERE id = $1`,
    [sessionId, count, from],
  );

/** What time does to a link's sessions: they expire, and keep their due amount until monitor_until. */
const expireOpenSessions = (linkId: string) =>
  db.store.query(
    `UPDATE payment_sessions SET status = 'expired', expired_at = now(), expires_at = now() - interval '1 second' WHERE payment_link_id = $1 AND status = 'created'`,
    [linkId],
  );

const linkSessions = async (...linkIds: string[]) =>
  (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = ANY($1)', [linkIds])).rows[0]!.n;

/** `visits` GETs of the links' public URLs (round robin), 4 at a time (the test store's pool has 5 connections), the sessions of each round expiring before the next. */
async function flood(linkIds: string[], visits: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let round = 0; round < visits / 4; round++) {
    answers.push(...(await Promise.all(Array.from({ length: 4 }, (_, i) => api.call('GET', `/pay/${linkIds[(round * 4 + i) % linkIds.length]}`)))));
    for (const linkId of linkIds) await expireOpenSessions(linkId);
  }
  return answers;
}

const tally = (answers: Answer[]) =>
  answers.reduce<Record<number, number>>((counts, answer) => ({ ...counts, [answer.status]: (counts[answer.status] ?? 0) + 1 }), {});

describe('a flood of anonymous visits to a payment link', () => {
  test('cannot use up the due amounts of its price: the merchant still creates sessions at it, and the link answers 429 with Retry-After', async () => {
    const m = await newMerchant(db.store);
    // A 6-decimal price has 10,000 due amounts per wallet. The merchant's own sessions hold 8,900
    // of them, and earlier visits to the link 800 (expired, still reserved for late payments).
    const first = await api.call('POST', '/api/v1/payments', { key: m.test, body: payment() });
    const own = Number(dueOffsetBound(6)) - MAX_LINK_RESERVATIONS_PER_PRICE - 100;
    await copiesOf(first.body.id, own, 1);
    const link = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ expiresIn: 60 }) });
    const visited = await api.call('GET', `/pay/${link.body.id}`);
    expect(visited.status).toBe(303);
    await copiesOf(/(ses_\w+)$/.exec(String(visited.headers.location))![1]!, 800, 1);
    await expireOpenSessions(link.body.id);

    // 300 more visits: 200 get a checkout, then the link refuses (without the cap all 300 would
    // get one, and the merchant's last 100 due amounts would be gone).
    const answers = await flood([link.body.id], 300);
    expect(tally(answers)).toEqual({ 303: 200, 429: 100 });
    expect(await linkSessions(link.body.id)).toBe(MAX_LINK_RESERVATIONS_PER_PRICE);
    const refused = answers.at(-1)!;
    expect(refused.body).toEqual({ error: expect.stringContaining('unpaid checkouts from payment links hold 1000 due amounts at this price and wallet') });
    // Retry-After: when the first reservation ends (expiry, 60 s, plus the 24 h late-payment window).
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_000);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(86_460);

    // The merchant's own sessions at that price still get unique due amounts.
    const created = await Promise.all(Array.from({ length: 4 }, () => api.call('POST', '/api/v1/payments', { key: m.test, body: payment() })));
    expect(created.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(created.map((answer) => answer.body.amountDueBaseUnits)).size).toBe(4);

    // A customer's browser gets a page that says so; a paid link session stops counting.
    const page = await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: { accept: 'text/html' } });
    expect([page.statusCode, page.body.includes('<h1>Too many checkouts open</h1>'), page.headers['retry-after'] !== undefined]).toEqual([429, true, true]);
    await db.store.query(
      `UPDATE payment_sessions SET status = 'confirmed', amount_received = amount_due, confirmed_at = now() WHERE id = (SELECT id FROM payment_sessions WHERE payment_link_id = $1 LIMIT 1)`,
      [link.body.id],
    );
    expect((await api.call('GET', `/pay/${link.body.id}`)).status).toBe(303);
    expect((await api.call('GET', `/pay/${link.body.id}`)).status).toBe(429);
    // Once the oldest reservations' late-payment windows end, visitors get checkouts again.
    await db.store.query(
      `UPDATE payment_sessions SET monitor_until = now() WHERE id IN (SELECT id FROM payment_sessions WHERE payment_link_id = $1 AND amount_received = 0 ORDER BY id LIMIT 2)`,
      [link.body.id],
    );
    expect(tally(await flood([link.body.id], 4))).toEqual({ 303: 2, 429: 2 });
  });

  test('the cap spans every link at one price and wallet: a second link cannot add reservations the first could not', async () => {
    const m = await newMerchant(db.store);
    const [a, b] = await Promise.all(
      [0, 1].map(() => api.call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '8', expiresIn: 60 }) })),
    );
    const visited = await api.call('GET', `/pay/${a!.body.id}`);
    await copiesOf(/(ses_\w+)$/.exec(String(visited.headers.location))![1]!, MAX_LINK_RESERVATIONS_PER_PRICE - 10, 1);
    await expireOpenSessions(a!.body.id);
    expect(tally(await flood([a!.body.id, b!.body.id], 40))).toEqual({ 303: 10, 429: 30 });
    expect(await linkSessions(a!.body.id, b!.body.id)).toBe(MAX_LINK_RESERVATIONS_PER_PRICE);
    // Another price on the same wallet is untouched.
    const other = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '9' }) });
    expect((await api.call('GET', `/pay/${other.body.id}`)).status).toBe(303);
  });

  test('dust does not free a reservation or an open slot: a session that saw less than its due amount still counts', async () => {
    const m = await newMerchant(db.store);
    const link = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '6', expiresIn: 60 }) });
    const visited = await api.call('GET', `/pay/${link.body.id}`);
    await copiesOf(/(ses_\w+)$/.exec(String(visited.headers.location))![1]!, MAX_LINK_RESERVATIONS_PER_PRICE - 10, 1);
    await expireOpenSessions(link.body.id);
    // Each of them paid one base unit (a reference-matched dust transfer on Solana).
    await db.store.query(`UPDATE payment_sessions SET amount_received = 1 WHERE payment_link_id = $1`, [link.body.id]);
    expect(tally(await flood([link.body.id], 20))).toEqual({ 303: 10, 429: 10 });

    // The open-checkout cap too: 200 open sessions of one link that each saw dust still fill it.
    const other = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '5', expiresIn: 3600 }) });
    const open = await api.call('GET', `/pay/${other.body.id}`);
    await copiesOf(/(ses_\w+)$/.exec(String(open.headers.location))![1]!, MAX_OPEN_SESSIONS_PER_LINK, 1);
    await db.store.query(`UPDATE payment_sessions SET status = 'confirming', amount_received = 1 WHERE payment_link_id = $1`, [other.body.id]);
    const refused = await api.call('GET', `/pay/${other.body.id}`);
    expect([refused.status, refused.body.error]).toEqual([429, expect.stringContaining('too many checkouts of this payment link are open')]);
  });
});
