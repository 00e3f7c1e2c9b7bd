/**
 * Engine benchmark: how fast reconcile matches a burst of transfers, confirms the sessions they
 * pay, expires the rest, and what an idle pass costs with many open sessions.
 *
 *   npx tsx bench/engine.ts [--sessions 5000] [--wallets 50]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54373). Sessions are made with the API's createSession (amounts from a
 * small set, so due amounts collide and get offsets); 80% are paid with one exact transfer each,
 * stored in one insert as the ingester would, 20% expire.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createMerchant } from '../src/accounts/index.ts';
import { createEngine } from '../src/engine/index.ts';
import { createSession } from '../src/payments/sessions.ts';
import { canonicalAddress } from '../src/internal/addresses.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { startEmbeddedPostgres } from '../src/store/embedded.ts';
import { createStore } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';

const { values } = parseArgs({ options: { sessions: { type: 'string', default: '5000' }, wallets: { type: 'string', default: '50' } } });
const SESSIONS = Number(values.sessions);
const WALLETS = Number(values.wallets);
const USDC = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const logger = createLogger({ level: 'warn' });

async function timed<T>(label: string, count: number, unit: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await work();
  const ms = performance.now() - start;
  console.log(`${label.padEnd(44)} ${ms.toFixed(0).padStart(7)} ms  ${count > 0 ? `${Math.round((count / ms) * 1000).toLocaleString('en')} ${unit}/s` : ''}`);
  return result;
}

async function main() {
  let connectionString = process.env.DATABASE_URL;
  let stop = async () => {};
  let dataDir: string | undefined;
  if (!connectionString) {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-engine-'));
    const embedded = await startEmbeddedPostgres({ dataDir, port: Number(process.env.BENCH_PG_PORT ?? 54373), logger });
    connectionString = embedded.connectionString;
    stop = embedded.stop;
  }
  await migrate({ connectionString });
  const store = createStore({ connectionString, max: 10 });
  try {
    const { merchant } = await createMerchant(store, createSecretBox(randomBytes(32)), { name: 'bench' });
    const wallets = Array.from({ length: WALLETS }, () => canonicalAddress('polygon', `0x${randomBytes(20).toString('hex')}`)!);
    const sessions = await timed('create sessions (createSession, one tx each)', SESSIONS, 'sessions', async () => {
      const made = [];
      for (let i = 0; i < SESSIONS; i++) {
        made.push(
          await store.transaction((sql) =>
            createSession(sql, {
              merchantId: merchant.id,
              livemode: true,
              amount: String(10 + (i % 7)),
              currency: 'USDC',
              chain: 'polygon',
              merchantWallet: wallets[i % WALLETS],
              monitorWindowSeconds: 86400,
            }),
          ),
        );
      }
      return made;
    });
    const paid = sessions.filter((_, i) => i % 5 !== 0);
    const expiring = sessions.filter((_, i) => i % 5 === 0);
    const engine = createEngine({ store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
    await store.query(`INSERT INTO chain_heads (livemode, chain, head_block, processed_block) VALUES (true, 'polygon', 1000, 1000)`);

    await timed('idle reconcile, all sessions open', SESSIONS, 'open sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));

    await store.query(
      `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_time, token_address, to_address, amount)
       SELECT true, 'polygon', '0x' || md5(random()::text) || md5(random()::text), 0, 1000 - (n % 20), now(), $1, pay_to, amount_due
         FROM unnest($2::text[], $3::numeric[]) WITH ORDINALITY AS p (pay_to, amount_due, n)`,
      [USDC, paid.map((s) => s.payTo), paid.map((s) => s.amountDue.toString())],
    );
    const matched = await timed(`match ${paid.length} transfers -> confirming`, paid.length, 'transfers', () =>
      engine.reconcile({ chain: 'polygon', livemode: true }),
    );
    if (matched.matched !== paid.length) throw new Error(`matched ${matched.matched} of ${paid.length}`);

    await store.query(`UPDATE chain_heads SET head_block = 1100 WHERE chain = 'polygon'`);
    const confirmed = await timed(`confirm ${paid.length} sessions`, paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    if (confirmed.changes.length !== paid.length) {
      const { rows } = await store.query('SELECT status, count(*)::int AS n FROM payment_sessions GROUP BY 1');
      const { rows: t } = await store.query('SELECT match_method, (session_id IS NULL) AS unmatched, count(*)::int AS n FROM transfers GROUP BY 1, 2');
      throw new Error(`confirmed ${confirmed.changes.length}: ${JSON.stringify(rows)} ${JSON.stringify(t)}`);
    }

    await store.query(`UPDATE payment_sessions SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [expiring.map((s) => s.id)]);
    const expired = await timed(`expire ${expiring.length} sessions`, expiring.length, 'sessions', () =>
      engine.reconcile({ chain: 'polygon', livemode: true }),
    );
    if (expired.changes.length !== expiring.length) throw new Error(`expired ${expired.changes.length}`);

    await timed('idle reconcile, all confirmed (not final)', paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    await store.query(`UPDATE chain_heads SET finalized_block = 1100 WHERE chain = 'polygon'`);
    await timed(`settle ${paid.length} sessions`, paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    await timed('idle reconcile, everything at rest', 0, '', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    const { rows } = await store.query<{ n: bigint }>('SELECT count(*) AS n FROM events');
    console.log(`events written: ${rows[0]!.n} (expected ${paid.length * 3 + expiring.length})`);
  } finally {
    await store.close();
    await stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
