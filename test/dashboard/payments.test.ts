import pino from 'pino';
import { describe, expect, test } from 'vitest';
import { formError, shopWithRoles } from '../helpers/dashboard.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';
import { insertTransfer, setHead } from '../helpers/engine.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { csvCell } from '../../src/dashboard/pages/paymentsCsv.ts';
import { txLink } from '../../src/dashboard/pages/paymentParts.ts';
import type { ChainName } from '../../src/internal/config.ts';

/**
 * The payments pages over HTTP (no browser): roles refused on the server even with a valid CSRF
 * token, other merchants' ids not found, the API's refusals word for word, search and the CSV
 * export. The browser flows are in payments.browser.test.ts.
 */
const db = useTestDatabase('dashboard_payments');
const api = useApi(db, { checked: false });
const engine = () => createEngine({ store: db.store, logger: pino({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
let block = 5000n;

/** A merchant with API keys and an owner, a developer and a viewer signed in to the dashboard. */
const shop = () => shopWithRoles(db.store, api.app);

const createSession = async (key: string, body: Record<string, unknown>) => {
  const answer = await api.call('POST', '/api/v1/sessions', { key, body: { amount: '25', currency: 'USDC', chain: 'polygon', ...body } });
  expect(answer.status).toBe(201);
  return answer.body as { id: string };
};

/** An unmatched 20 USDC sandbox transfer next to two 25 USDC sessions (ambiguous: the engine cannot pick one). */
async function unmatchedTransfer(m: Awaited<ReturnType<typeof newMerchant>>) {
  const [a, b] = [await createSession(m.test, {}), await createSession(m.test, {})];
  block += 100n;
  const transfer = await insertTransfer(db.store, { livemode: false, to: sandboxWallet('polygon', m.id), amount: 20_000_000n, block });
  await setHead(db.store, { livemode: false, head: block + 40n });
  await engine().reconcile({ chain: 'polygon', livemode: false });
  return { a: a!, b: b!, id: `trf_${transfer.id}`, txHash: transfer.txHash };
}

describe('payments pages over HTTP', () => {
  test('a viewer cannot create a link or attribute a transfer, even with a valid CSRF token; nothing changes', async () => {
    const { m, viewer, developer } = await shop();
    const { id, b } = await unmatchedTransfer(m);
    const links = await viewer.get('/dashboard/links');
    expect(links.status).toBe(200);
    expect(links.body).not.toContain('Create link');
    expect(viewer.csrfToken).toBeTruthy();
    const forged = await viewer.post('/dashboard/links', { amount: '10', currency: 'USDC', chain: 'base' });
    expect(forged.status).toBe(403);
    expect(formError(forged.body)).toBe('your role (viewer) may not do this (links.manage)');
    const attribute = await viewer.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: b.id });
    expect(attribute.status).toBe(403);
    // The developer may create links but not attribute transfers (payments.manage is the owner's).
    expect((await developer.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: b.id })).status).toBe(403);
    const { rows } = await db.store.query<{ links: number; matched: number }>(
      `SELECT (SELECT count(*)::int FROM payment_links WHERE merchant_id = $1) AS links,
              (SELECT count(*)::int FROM transfers WHERE session_id IS NOT NULL AND to_address = $2) AS matched`,
      [m.id, sandboxWallet('polygon', m.id)],
    );
    expect(rows[0]).toEqual({ links: 0, matched: 0 });
    const created = await developer.post('/dashboard/links', { amount: '10', currency: 'USDC', chain: 'base' });
    expect(created.status).toBe(303);
  });

  test('a form post with Origin: null (what Chromium sends under no-referrer) passes only when Sec-Fetch-Site says same-origin', async () => {
    const { developer, m } = await shop();
    const form = { amount: '10', currency: 'USDC', chain: 'base' };
    expect((await developer.post('/dashboard/links', form, { headers: { origin: 'null', 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    expect((await developer.post('/dashboard/links', form, { headers: { origin: 'null' } })).status).toBe(403);
    expect((await developer.post('/dashboard/links', form, { headers: { origin: 'null', 'sec-fetch-site': 'same-origin' } })).status).toBe(303);
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_links WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(1);
  });

  test("another merchant's payment, transfer and link answer not found; nothing of theirs is shown", async () => {
    const mine = await shop();
    const theirs = await newMerchant(db.store, 'Other Shop');
    const payment = await createSession(theirs.test, { metadata: { order: 'theirs-1' } });
    const link = await api.call('POST', '/api/v1/payment-links', { key: theirs.test, body: { amount: '5', currency: 'USDC', chain: 'base' } });
    const { id } = await unmatchedTransfer(theirs);
    const page = await mine.owner.get(`/dashboard/payments/${payment.id}`);
    expect(page.status).toBe(404);
    expect(formError(page.body)).toBe(`payment ${payment.id} not found`);
    expect((await mine.owner.get(`/dashboard/payments/${payment.id}/live`, { 'hx-request': 'true' })).status).toBe(404);
    expect((await mine.owner.post(`/dashboard/payments/${payment.id}/refunds`, {})).status).toBe(404);
    expect((await mine.owner.post(`/dashboard/links/${link.body.id}/deactivate`, {})).status).toBe(404);
    const attribute = await mine.owner.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: payment.id });
    expect(formError(attribute.body)).toBe(`transfer ${id} not found`);
    // Search is scoped too: their metadata value and payment id find nothing here.
    expect((await mine.owner.get('/dashboard/payments?q=theirs-1')).body).toContain('No payments match.');
    expect((await mine.owner.get(`/dashboard/payments?q=${payment.id}`)).body).not.toContain(`data-payment="${payment.id}"`);
    expect((await api.call('GET', `/api/v1/payment-links/${link.body.id}`, { key: theirs.test })).body.active).toBe(true);
  });

  test("bad link input shows the API's message word for word and creates nothing", async () => {
    const { m, owner } = await shop();
    const cases: Record<string, string>[] = [
      { amount: '12.5.0', currency: 'USDC', chain: 'base' },
      { amount: '0.001', currency: 'USDC', chain: 'base' },
      { amount: '10', currency: 'USDC', chain: 'base', expiresIn: '10' },
      { amount: '10', currency: 'USDC', chain: 'base', webhookUrl: 'ftp://example.com/hook' },
      { amount: '10', currency: 'USDC', chain: 'base', merchantWallet: '0x1234' },
      { amount: '10', currency: 'EUR', chain: 'base' },
    ];
    for (const form of cases) {
      const body: Record<string, unknown> = { ...form };
      if (form.expiresIn) body.expiresIn = Number(form.expiresIn);
      const fromApi = await api.call('POST', '/api/v1/payment-links', { key: m.test, body });
      expect(fromApi.status, JSON.stringify(form)).toBe(400);
      const page = await owner.post('/dashboard/links', form);
      expect(page.status, JSON.stringify(form)).toBe(400);
      expect(formError(page.body), JSON.stringify(form)).toBe((fromApi.body as { error: string }).error);
      // The person's input is kept in the form.
      expect(page.body).toContain(`value="${form.amount}"`);
    }
    expect(formError((await owner.post('/dashboard/links', { amount: '1', currency: 'USDC', chain: 'base', metadata: 'no equals sign' })).body)).toBe(
      'metadata line 1 must be key=value',
    );
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_links WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(0);
  });

  test('search finds a payment by id, transaction hash and metadata value; the CSV has exact decimal text and defused formulas', async () => {
    const { m, owner } = await shop();
    const hostile = '=HYPERLINK("https://evil.example","click")';
    const tagged = await createSession(m.test, { amount: '999999.890123', metadata: { order: 'A-1001', note: hostile } });
    const other = await createSession(m.test, { amount: '3', metadata: { order: 'B-2002' } });
    const { b, txHash, id } = await unmatchedTransfer(m);
    expect((await owner.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: b.id })).status).toBe(303);

    const found = (query: string) => owner.get(`/dashboard/payments?q=${encodeURIComponent(query)}`).then((answer) => answer.body);
    const idsIn = (body: string) => [...body.matchAll(/data-payment="(ses_[^"]+)"/g)].map((match) => match[1]);
    expect(idsIn(await found('A-1001'))).toEqual([tagged.id]);
    expect(idsIn(await found(hostile))).toEqual([tagged.id]);
    expect(idsIn(await found(other.id))).toEqual([other.id]);
    expect(idsIn(await found(txHash))).toEqual([b.id]);
    expect(idsIn(await found('A-100'))).toEqual([]);
    // Filters combine with the search.
    expect(idsIn(await owner.get('/dashboard/payments?q=A-1001&status=confirmed').then((answer) => answer.body))).toEqual([]);
    const bad = await owner.get('/dashboard/payments?from=2026-02-30');
    expect(bad.status).toBe(400);
    expect(formError(bad.body)).toBe('from must be a date such as 2026-01-31');

    const csv = await owner.get('/dashboard/payments/export.csv?q=A-1001');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(String(csv.headers['content-disposition'])).toMatch(/^attachment; filename="payments-test-\d{4}-\d{2}-\d{2}\.csv"$/);
    const [header, line, ...rest] = csv.body.split('\r\n');
    expect(rest).toEqual(['']);
    expect(header!.split(',').slice(0, 7)).toEqual(['"id"', '"created_at"', '"status"', '"chain"', '"currency"', '"amount"', '"amount_base_units"']);
    expect(line).toContain(`"${tagged.id}"`);
    expect(line).toContain('"pending","polygon","USDC","999999.890123","999999890123"');
    // The metadata cell is JSON (starts with "{"), so not a formula; a cell that starts with = is quoted.
    expect(line).toContain(csvCell(JSON.stringify({ note: hostile, order: 'A-1001' })));
    expect(csvCell(hostile)).toBe(`"'=HYPERLINK(""https://evil.example"",""click"")"`);
    for (const start of ['=', '+', '-', '@', '\t']) expect(csvCell(`${start}1`).startsWith(`"'${start}`)).toBe(true);
    expect(csvCell('12.5')).toBe('"12.5"');

    const all = await owner.get('/dashboard/payments/export.csv');
    expect(all.body.trim().split('\r\n')).toHaveLength(1 + 4);
  });

  test('an owner attributes an unmatched transfer: the payment moves, the audit log has it, and the API agrees', async () => {
    const { m, owner } = await shop();
    const { a, b, id } = await unmatchedTransfer(m);
    const list = await owner.get('/dashboard/unmatched');
    expect(list.body).toContain(id);
    const empty = await owner.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: '' });
    expect(formError(empty.body)).toBe('sessionId must not be empty');
    const done = await owner.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: b.id });
    expect(done.status).toBe(303);
    expect((await owner.get(String(done.headers.location))).body).toContain(`Transfer ${id} now pays payment ${b.id}.`);
    const again = await owner.post(`/dashboard/unmatched/${id}/attribute`, { sessionId: a.id });
    expect(formError(again.body)).toBe(`transfer ${id} is already attributed to session ${b.id}`);
    expect((await api.call('GET', `/api/v1/payments/${b.id}`, { key: m.test })).body).toMatchObject({ status: 'pending', amountReceived: '20' });
    const { rows } = await db.store.query('SELECT action, target, details FROM audit_log WHERE merchant_id = $1 AND action = $2', [
      m.id,
      'transfer.attributed',
    ]);
    expect(rows).toEqual([{ action: 'transfer.attributed', target: id, details: { sessionId: b.id, sessionStatus: 'pending' } }]);
    const payment = await owner.get(`/dashboard/payments/${b.id}`);
    expect(payment.body).toContain('payment.underpaid');
    // A refund of the confirmed 20 USDC: too much is refused with POST /refunds's words; 5 is requested.
    const tooMuch = await api.call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: b.id, amount: '50' } });
    const refused = await owner.post(`/dashboard/payments/${b.id}/refunds`, { amount: '50', address: '', reason: '' });
    expect(refused.status).toBe(400);
    expect(formError(refused.body)).toBe((tooMuch.body as { error: string }).error);
    expect(formError((await owner.post(`/dashboard/payments/${b.id}/refunds`, { amount: '5e1' })).body)).toBe(
      'amount must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)',
    );
    // The form's defaults are the API's: no address means the payer's, unknown for this hand-made transfer.
    const noAddress = await owner.post(`/dashboard/payments/${b.id}/refunds`, { amount: '5' });
    expect(formError(noAddress.body)).toBe((await api.call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: b.id, amount: '5' } })).body.error);
    const requested = await owner.post(`/dashboard/payments/${b.id}/refunds`, { amount: '5', address: WALLET, reason: 'broken mug' });
    expect(requested.status, formError(requested.body)).toBe(303);
    const after = await owner.get(String(requested.headers.location));
    expect(after.body).toContain(`requested: 5.00 USDC to ${WALLET}.`);
    const refunds = await api.call('GET', `/api/v1/refunds?paymentId=${b.id}`, { key: m.test });
    expect(refunds.body.data).toEqual([expect.objectContaining({ amount: '5', status: 'requested', reason: 'broken mug' })]);
    expect(payment.body).toContain(`trf_${id.slice(4)}`);
    expect(payment.body).toContain('manual');
  });

  test('live transfers link to the chain explorer named in chains/*.json; simulated ones link nowhere', () => {
    const hash = `0x${'ab'.repeat(32)}`;
    const expected: Record<string, string> = {
      polygon: `https://polygonscan.com/tx/${hash}`,
      base: `https://basescan.org/tx/${hash}`,
      bsc: `https://bscscan.com/tx/${hash}`,
      arbitrum: `https://arbiscan.io/tx/${hash}`,
      optimism: `https://optimistic.etherscan.io/tx/${hash}`,
      solana: `https://explorer.solana.com/tx/${hash}`,
    };
    for (const [chain, url] of Object.entries(expected)) {
      expect(txLink(chain as ChainName, hash, true).text).toContain(`href="${url}"`);
      expect(txLink(chain as ChainName, hash, false).text).not.toContain('href=');
    }
    // A hash is a path segment, never markup or a second path.
    expect(txLink('polygon', '"/../x?<y>', true).text).toContain('href="https://polygonscan.com/tx/%22%2F..%2Fx%3F%3Cy%3E"');
  });
});
