import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { addUserWithPassword, signedInClient } from '../helpers/dashboard.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { insertTransfer, setHead } from '../helpers/engine.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { countLinkVisits } from '../../src/payments/linkVisits.ts';

/**
 * Issue 27 with a real Postgres and the real engine: a single-pair payment link makes a session at
 * each visit (agents and wallets still get payable instructions at once), but a visit that never
 * saw a transfer is not a payment: the dashboard's payments list, its CSV and Home's figures and
 * recent payments leave it out, say how many they left out, and list them on demand; the link's
 * own page lists them. Once a transfer is matched it is an ordinary payment everywhere. The API's
 * lists are unchanged (every session).
 */
const db = useTestDatabase('dashboard_link_visits');
const api = useApi(db, { checked: false });
const engine = () => createEngine({ store: db.store, logger: pino({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });

const rowOf = (body: string, id: string) => body.includes(`data-payment="${id}"`);

/** Visits a link as a browser would (no Accept: JSON): the new session's id. */
async function visit(linkId: string): Promise<string> {
  const answer = await api.call('GET', `/pay/${linkId}`, { headers: { accept: 'text/html' } });
  expect(answer.status).toBe(303);
  return String(answer.headers.location).split('/checkout/')[1]!;
}

describe('link visits without payment (issue 27)', () => {
  test('left out of the payments list, CSV and Home by default, counted, shown on demand; a matched transfer makes one a payment', async () => {
    const m = await newMerchant(db.store);
    const owner = await signedInClient(api.app, (await addUserWithPassword(db.store, { merchantId: m.id, role: 'owner' })).email);
    const link = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '3', chain: 'polygon', currency: 'USDC' } });
    const linkId = link.body.id as string;

    // An agent fetching the link with Accept: application/json still gets payable instructions (via the 303).
    const agent = await api.call('GET', `/pay/${linkId}`, { headers: { accept: 'application/json' } });
    expect(agent.status).toBe(303);
    const agentSession = String(agent.headers.location).split('/checkout/')[1]!;
    const instructions = await api.app.inject({ method: 'GET', url: `/checkout/${agentSession}`, headers: { accept: 'application/json' } });
    expect(instructions.statusCode).toBe(200);
    const payable = instructions.json() as Record<string, unknown>;
    expect(payable).toMatchObject({ chain: 'polygon', currency: 'USDC' });
    expect(JSON.stringify(payable)).toContain(sandboxWallet('polygon', m.id));

    const browsed = await visit(linkId);
    const expired = await visit(linkId);
    await db.store.query("UPDATE payment_sessions SET status = 'expired', expired_at = now() WHERE id = $1", [expired]);
    const direct = await api.call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '9', chain: 'polygon', currency: 'USDC' } });
    expect(direct.status).toBe(201);
    // A link with several options: its session exists only because the customer chose, which is listed.
    const options = await api.call('POST', '/api/v1/payment-links', {
      key: m.test,
      body: {
        amount: '2',
        paymentOptions: [
          { chain: 'polygon', currency: 'USDC' },
          { chain: 'base', currency: 'USDC' },
        ],
      },
    });
    const chose = await api.call('POST', `/pay/${options.body.id}/choice`, { body: { chain: 'base', currency: 'USDC' } });
    const chosen = String(chose.headers.location).split('/checkout/')[1]!;
    const visits = [agentSession, browsed, expired];

    const list = await owner.get('/dashboard/payments');
    expect(list.status).toBe(200);
    for (const id of visits) expect(rowOf(list.body, id), id).toBe(false);
    expect(rowOf(list.body, direct.body.id)).toBe(true);
    expect(rowOf(list.body, chosen)).toBe(true);
    expect(list.body).toContain('3 payment-link visits without payment are not counted as payments.');
    expect(list.body).toContain('href="/dashboard/payments?visits=only"');
    // Filtering by status: the pending ones of the list are not the visits either.
    const pending = await owner.get('/dashboard/payments?status=pending');
    for (const id of visits) expect(rowOf(pending.body, id)).toBe(false);
    const only = await owner.get('/dashboard/payments?visits=only');
    expect(visits.map((id) => rowOf(only.body, id))).toEqual([true, true, true]);
    expect(rowOf(only.body, direct.body.id)).toBe(false);
    const all = await owner.get('/dashboard/payments?visits=all');
    for (const id of [...visits, direct.body.id, chosen]) expect(rowOf(all.body, id)).toBe(true);
    expect((await owner.get('/dashboard/payments?visits=some')).status).toBe(400);
    // A search names one payment: it is found whatever it is.
    expect(rowOf((await owner.get(`/dashboard/payments?q=${browsed}`)).body, browsed)).toBe(true);
    // The CSV follows the list.
    const csv = await owner.get('/dashboard/payments/export.csv');
    expect(csv.body).toContain(direct.body.id);
    expect(csv.body).not.toContain(browsed);
    expect((await owner.get('/dashboard/payments/export.csv?visits=all')).body).toContain(browsed);

    // Home: two payments (the direct one and the chosen one), the visits counted apart.
    const home = await owner.get('/dashboard');
    expect(home.body).toContain('<dd id="figure-payments">2</dd>');
    expect(home.body).toContain('3 payment-link visits without payment are not counted as payments.');
    for (const id of visits) expect(rowOf(home.body, id)).toBe(false);

    // The link's page lists its visits.
    const linkPage = await owner.get(`/dashboard/links/${linkId}`);
    for (const id of visits) expect(rowOf(linkPage.body, id)).toBe(true);

    // The API still lists every session.
    const fromApi = await api.call('GET', '/api/v1/payments?limit=100', { key: m.test });
    const apiIds = (fromApi.body.data as { id: string }[]).map((row) => row.id);
    for (const id of visits) expect(apiIds).toContain(id);

    // A transfer for the browsed visit: matched, it is a payment in the list and the figures.
    const session = await api.call('GET', `/api/v1/sessions/${browsed}`, { key: m.test });
    const due = BigInt(session.body.amountDueBaseUnits as string);
    await insertTransfer(db.store, { livemode: false, to: sandboxWallet('polygon', m.id), amount: due, block: 7000n });
    await setHead(db.store, { livemode: false, head: 7040n });
    await engine().reconcile({ chain: 'polygon', livemode: false });
    const after = await owner.get('/dashboard/payments');
    expect(rowOf(after.body, browsed)).toBe(true);
    expect(after.body).toContain('2 payment-link visits without payment are not counted as payments.');
    expect((await owner.get('/dashboard')).body).toContain('<dd id="figure-payments">3</dd>');
    expect(await countLinkVisits(db.store, { merchantId: m.id, livemode: false })).toBe(2);
  });

  test('a transfer that a reorg removed still makes the visit a payment attempt; the count is per merchant and mode', async () => {
    const m = await newMerchant(db.store, 'Reorg Shop');
    const other = await newMerchant(db.store, 'Other Shop');
    const link = await api.call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '4', chain: 'polygon', currency: 'USDC' } });
    const otherLink = await api.call('POST', '/api/v1/payment-links', { key: other.test, body: { amount: '4', chain: 'polygon', currency: 'USDC' } });
    const id = await visit(link.body.id);
    await visit(otherLink.body.id);
    expect(await countLinkVisits(db.store, { merchantId: m.id, livemode: false })).toBe(1);
    expect(await countLinkVisits(db.store, { merchantId: m.id, livemode: true })).toBe(0);
    // A transfer row matched to it, since removed by a reorg: the session's money is back to 0, but someone paid.
    const transfer = await insertTransfer(db.store, { livemode: false, to: sandboxWallet('polygon', m.id), amount: 1n, block: 9000n });
    await db.store.query("UPDATE transfers SET session_id = $1, status = 'removed' WHERE id = $2", [id, String(transfer.id)]);
    expect(await countLinkVisits(db.store, { merchantId: m.id, livemode: false })).toBe(0);
    expect(await countLinkVisits(db.store, { merchantId: other.id, livemode: false })).toBe(1);
  });
});
