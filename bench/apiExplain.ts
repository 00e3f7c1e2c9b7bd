/**
 * The query plans behind a payment creation and a read, on a wallet that already has `--open`
 * open sessions for the same price (the unique-due-amount path at its busiest): every statement
 * that `createSession` and `getSession` send is recorded as sent, then run again under
 * `EXPLAIN (ANALYZE, BUFFERS)` in a transaction that is rolled back. The statements come from the
 * engine's own code, so the plans follow it when it changes.
 *
 *   npx tsx bench/apiExplain.ts [--open 3000]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54368).
 */
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { addWallet, createMerchant } from '../src/accounts/index.ts';
import { createSession, getSession, type CreateSessionParams } from '../src/payments/sessions.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createStore, statementText, type Sql } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase } from './lib.ts';

const { values } = parseArgs({ options: { open: { type: 'string', default: '3000' } } });
const OPEN = Number(values.open);

interface Sent {
  text: string;
  values: unknown[] | undefined;
}

/** Runs `work` in a transaction that is rolled back, recording every statement it sends. */
async function record(sql: { transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> }, work: (sql: Sql) => Promise<unknown>): Promise<Sent[]> {
  const sent: Sent[] = [];
  const rollback = new Error('rollback');
  await sql
    .transaction(async (inner) => {
      await work({ query: (statement, values) => (sent.push({ text: statementText(statement), values }), inner.query(statement, values)) });
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return sent;
}

async function main() {
  const database = await benchDatabase('api-explain', 54368);
  await migrate({ connectionString: database.connectionString });
  const store = createStore({ connectionString: database.connectionString, max: 4 });
  try {
    const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'Explain Shop' });
    const wallet = privateKeyToAddress(generatePrivateKey());
    await addWallet(store, { merchantId: merchant.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const params: CreateSessionParams = {
      merchantId: merchant.id,
      livemode: true,
      amount: '25.00',
      currency: 'USDC',
      chain: 'polygon',
      merchantWallet: wallet,
      monitorWindowSeconds: 3600,
      liveChains: ['polygon'],
    };
    let last = '';
    for (let i = 0; i < OPEN; i++) last = (await store.transaction((sql) => createSession(sql, params))).id;
    await store.query('ANALYZE payment_sessions');

    console.log(`api explain: npx tsx bench/apiExplain.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
    console.log(`${OPEN} open sessions for USDC 25.00 to one polygon wallet\n`);
    const statements = [
      ...(await record(store, (sql) => createSession(sql, params))).map((sent) => ({ ...sent, what: 'POST /payments (createSession)' })),
      ...(await record(store, (sql) => getSession(sql, { merchantId: merchant.id, livemode: true, id: last }))).map((sent) => ({
        ...sent,
        what: 'GET /payments/{id} (getSession)',
      })),
    ];
    for (const statement of statements) {
      if (/^\s*(BEGIN|SET|COMMIT)/i.test(statement.text)) continue;
      // EXPLAIN ANALYZE runs the statement: in a transaction rolled back, like the recording.
      await record(store, async (sql) => {
        const { rows } = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, statement.values);
        console.log(`-- ${statement.what}\n${statement.text.replace(/\s+/g, ' ').trim()}\n${rows.map((row) => `  ${row['QUERY PLAN']}`).join('\n')}\n`);
      });
    }
  } finally {
    await store.close();
    await database.close();
  }
}

await main();
