/**
 * Engine benchmark: how fast reconcile matches a burst of transfers, confirms the sessions they
 * pay, expires the rest, and what an idle pass costs with many open sessions.
 *
 *   npx tsx bench/engine.ts [--sessions 5000] [--wallets 50] [--backfill 20000] [--statements]
 *
 * Uses DATABASE_URL when set, otherwise an embedded Postgres in a temporary folder (port
 * BENCH_PG_PORT, default 54373). Sessions are made with the API's createSession (amounts from a
 * small set, so due amounts collide and get offsets); 80% are paid with one exact transfer each,
 * 20% expire.
 *
 * The paying transfers arrive as a backfill (issue 16 goal 3): `--backfill` transfers in all,
 * the paying ones spread among others into the same wallets that pay no session (amounts no
 * session is due), committed in ranges of 1,000 with the ingester's own `commitRange`, each range
 * followed by `engine.onChainChange` as the ingester calls it. The clock runs from the first
 * range's commit until the engine is idle with every transfer decided; the same ranges written
 * with no engine give the backfill's own rate in the same run. `--statements` prints the
 * costliest statements of the engine's run (pg_stat_statements).
 */
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createMerchant } from '../src/accounts/index.ts';
import { createEngine } from '../src/engine/index.ts';
import { createSession } from '../src/payments/sessions.ts';
import { commitRange } from '../src/ingest/evm/persist.ts';
import type { ObservedTransfer } from '../src/ingest/evm/transfers.ts';
import { canonicalAddress } from '../src/internal/addresses.ts';
import { createSecretBox } from '../src/internal/crypto.ts';
import { createLogger } from '../src/internal/logger.ts';
import { createMetricsRegistry } from '../src/internal/metrics.ts';
import { createStore, type Store } from '../src/store/index.ts';
import { migrate } from '../src/store/migrate.ts';
import { benchDatabase } from './lib.ts';
import { createStatementStats } from './databaseStats.ts';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '5000' },
    wallets: { type: 'string', default: '50' },
    backfill: { type: 'string', default: '20000' },
    statements: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const WALLETS = Number(values.wallets);
const USDC = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
/** Transfers per committed range and per block (one block per range, as bench/ingest.ts mints them): a backfill of 20,000 spans 20 blocks, fewer than polygon's 32 confirmations, so every paid session is still confirming at its end. */
const RANGE = 1_000;
const PER_BLOCK = 1_000;
const logger = createLogger({ level: 'warn' });

async function timed<T>(label: string, count: number, unit: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await work();
  const ms = performance.now() - start;
  console.log(`${label.padEnd(52)} ${ms.toFixed(0).padStart(7)} ms  ${count > 0 ? `${Math.round((count / ms) * 1000).toLocaleString('en')} ${unit}/s` : ''}`);
  return result;
}

/** The backfill's transfers in chain order: the paying ones spread evenly among the others. */
function backfillTransfers(paying: { payTo: string; amountDue: bigint }[], total: number, wallets: string[]): ObservedTransfer[] {
  const transfers: ObservedTransfer[] = [];
  const every = Math.max(1, Math.floor(total / Math.max(1, paying.length)));
  let next = 0;
  for (let i = 0; i < Math.max(total, paying.length); i++) {
    const pays = i % every === 0 && next < paying.length ? paying[next++] : undefined;
    transfers.push({
      txHash: `0x${randomBytes(32).toString('hex')}`,
      logIndex: i % PER_BLOCK,
      blockNumber: 0n,
      blockHash: '',
      blockTime: new Date(),
      token: USDC,
      from: '0x0000000000000000000000000000000000000001',
      to: pays?.payTo ?? wallets[i % wallets.length]!,
      // 7 base units: no session is due that little, so these stay unmatched (every rule looked at).
      amount: pays?.amountDue ?? 7n,
    });
  }
  return transfers;
}

/** Commits `transfers` in ranges as the ingester does, calling `afterCommit` after each. */
async function writeBackfill(store: Store, chain: string, transfers: ObservedTransfer[], afterCommit: () => void): Promise<void> {
  const firstBlock = 1_000n;
  for (let at = 0; at < transfers.length; at += RANGE) {
    const range = transfers.slice(at, at + RANGE).map((transfer, i) => {
      const blockNumber = firstBlock + BigInt(Math.floor((at + i) / PER_BLOCK));
      return { ...transfer, blockNumber, blockHash: `0x${blockNumber.toString(16).padStart(64, '0')}` };
    });
    const last = range.at(-1)!.blockNumber;
    await store.transaction((sql) => commitRange(sql, { chain, transfers: range, blocks: [], processedBlock: last, head: last, safe: null, finalized: null }));
    afterCommit();
  }
}

async function main() {
  const database = await benchDatabase('engine', 54373, { statements: values.statements });
  const { connectionString } = database;
  await migrate({ connectionString });
  const store = createStore({ connectionString, max: 10 });
  const statements = values.statements ? await createStatementStats(connectionString) : undefined;
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

    const transfers = backfillTransfers(paid, Number(values.backfill), wallets);
    // The same backfill into another chain no engine looks at: what writing it costs alone.
    const elsewhere = transfers.map((transfer) => ({ ...transfer, txHash: `0x${randomBytes(32).toString('hex')}` }));
    await timed(`backfill alone: ${transfers.length} transfers, ranges of ${RANGE}`, transfers.length, 'transfers', () =>
      writeBackfill(store, 'ethereum', elsewhere, () => {}),
    );
    await statements?.reset();
    await timed(`backfill + engine until all ${transfers.length} decided`, transfers.length, 'transfers', async () => {
      await writeBackfill(store, 'polygon', transfers, () => engine.onChainChange({ chain: 'polygon', livemode: true, kind: 'transfers' }));
      await engine.idle();
    });
    if (statements) for (const line of await statements.top(transfers.length, 10)) console.log(`    ${line}`);
    const { rows: decided } = await store.query<{ matched: number; undecided: number }>(
      `SELECT count(*) FILTER (WHERE session_id IS NOT NULL)::int AS matched,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id))::int AS undecided
         FROM transfers t WHERE chain = 'polygon'`,
    );
    if (decided[0]!.matched !== paid.length || decided[0]!.undecided !== 0) throw new Error(`after the backfill: ${JSON.stringify(decided[0])}`);
    const { rows: moved } = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM payment_sessions WHERE status = 'confirming'`);
    if (moved[0]!.n !== paid.length) throw new Error(`${moved[0]!.n} of ${paid.length} sessions confirming`);

    await store.query(`UPDATE chain_heads SET head_block = 100000 WHERE chain = 'polygon'`);
    const confirmed = await timed(`confirm ${paid.length} sessions`, paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    if (confirmed.changes.length !== paid.length) throw new Error(`confirmed ${confirmed.changes.length}`);

    await store.query(`UPDATE payment_sessions SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [expiring.map((s) => s.id)]);
    const expired = await timed(`expire ${expiring.length} sessions`, expiring.length, 'sessions', () =>
      engine.reconcile({ chain: 'polygon', livemode: true }),
    );
    if (expired.changes.length !== expiring.length) throw new Error(`expired ${expired.changes.length}`);

    await timed('idle reconcile, all confirmed (not final)', paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    await store.query(`UPDATE chain_heads SET finalized_block = 100000 WHERE chain = 'polygon'`);
    await timed(`settle ${paid.length} sessions`, paid.length, 'sessions', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    await timed('idle reconcile, everything at rest', 0, '', () => engine.reconcile({ chain: 'polygon', livemode: true }));
    const { rows } = await store.query<{ n: bigint }>('SELECT count(*) AS n FROM events');
    console.log(`events written: ${rows[0]!.n} (expected ${paid.length * 3 + expiring.length})`);
  } finally {
    await statements?.close();
    await store.close();
    await database.close();
  }
}

await main();
