/**
 * Postgres failover under load (issue 30, run 1). A primary and a standby (Debian's PostgreSQL 15),
 * the whole fleet (api, two ingest, worker: real daemon processes) reaching the primary through a
 * TCP router that follows the promotion, as CloudNativePG's `-rw` Service does. Under steady live
 * payments on anvil and API reads, the primary is SIGKILLed (postmaster and backends), and after
 * `--detect` seconds (the operator noticing) the standby is promoted and the router follows it.
 * Then the audit (lib/ledgerAudit.ts) on the new primary, and each role's time to recover.
 *
 *   npx tsx bench/chaos/failover.ts [--mode sync|async|both] [--before 20] [--after 20] [--lag 3]
 *
 * `async`: replication is held back for `--lag` seconds before the kill (a lagging standby), so the
 * run shows what an asynchronous standby loses (the RPO) and what the engine repairs from the chain.
 * Exits non-zero on any defect; in async mode the losses the RPO explains are reported, not failed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { getAddress, type Address } from 'viem';
import { loadChains } from '../../src/internal/chains.ts';
import { startAnvil } from '../../test/helpers/anvil.ts';
import { startFleet } from './lib/fleet.ts';
import { auditLedger, reportAudit } from './lib/ledgerAudit.ts';
import { hasDebianPostgres, startPgCluster } from './lib/pgCluster.ts';
import { settle } from './lib/settle.ts';
import { createTcpRouter } from './lib/tcpRouter.ts';
import { liveMerchant, runPayments, startHookReceiver, startMiner, startPayer, startReaders, type PaymentRecord } from './lib/traffic.ts';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'both' },
    before: { type: 'string', default: '20' },
    after: { type: 'string', default: '20' },
    lag: { type: 'string', default: '3' },
    detect: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '3' },
  },
});
const WALLET: Address = getAddress('0x5555555555555555555555555555555555555555');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number | undefined) => (ms === undefined ? 'never' : `${(ms / 1000).toFixed(1)} s`);

async function runOnce(mode: 'sync' | 'async'): Promise<string[]> {
  console.log(`\n== failover, ${mode} standby ==`);
  const cluster = await startPgCluster({ mode });
  const rw = await createTcpRouter(cluster.primary.port);
  const anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  const usdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
  const receiver = await startHookReceiver();
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-failover-${mode}-`));
  const fleet = await startFleet({
    databaseUrl: rw.urlFor(cluster.primary.url),
    rpcUrls: { SVC_POLYGON_RPC_URL: anvil.rpcUrl },
    names: ['api', 'ingest-1', 'ingest-2', 'worker'],
    logDir,
  });
  const failing: string[] = [];
  try {
    const key = await liveMerchant(fleet, WALLET, receiver.url);
    const payer = await startPayer(anvil, usdc);
    const miner = startMiner(anvil, 250);
    const records: PaymentRecord[] = [];
    let stopped = false;
    const traffic = runPayments({
      apiUrl: () => fleet.apiUrl,
      key,
      wallet: WALLET,
      send: payer.send,
      count: Number.POSITIVE_INFINITY,
      concurrency: Number(values.concurrency),
      runId: `failover-${mode}-${Date.now()}`,
      records,
      paceMs: 100,
      stop: () => stopped,
    });
    const readers = startReaders({ apiUrl: () => fleet.apiUrl, key, records, readers: 2, everyMs: 50 });
    // Ingest progress as the database behind the router sees it.
    const progress: { at: number; block: bigint }[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const client = new pg.Client({ connectionString: rw.urlFor(cluster.primary.url), connectionTimeoutMillis: 1_000 });
        client.on('error', () => {});
        try {
          await client.connect();
          const { rows } = await client.query<{ b: string | null }>("SELECT processed_block::text AS b FROM chain_heads WHERE livemode AND chain = 'polygon'");
          if (rows[0]?.b) progress.push({ at: Date.now(), block: BigInt(rows[0].b) });
        } catch {}
        await client.end().catch(() => {});
        await sleep(200);
      }
    })();

    await sleep(Number(values.before) * 1000);
    let lagBytes = 0n;
    if (mode === 'async') {
      cluster.replicationLink.down();
      await sleep(Number(values.lag) * 1000);
      lagBytes = await cluster.lagBytes();
    }
    const acknowledgedBeforeKill = records.filter((record) => record.sessionId).length;
    const killAt = Date.now();
    cluster.primary.kill();
    rw.route(undefined);
    const blockAtKill = progress.at(-1)?.block ?? 0n;
    const anvilHeadAtKill = await anvil.blockNumber();
    await sleep(Number(values.detect) * 1000);
    const promoteMs = await cluster.promote();
    rw.route(cluster.standby.port);
    const promotedAt = Date.now();
    console.log(
      `killed the primary at +0 s; standby promoted at +${seconds(promotedAt - killAt)} (pg_promote ${promoteMs.toFixed(0)} ms)${mode === 'async' ? `; WAL not on the standby at the kill: ${lagBytes} bytes` : ''}`,
    );
    await sleep(Number(values.after) * 1000);
    stopped = true;
    await traffic;
    await readers.stop();
    watching = false;
    await watcher;
    await miner.stop();

    const settled = await settle({ databaseUrl: cluster.standby.url, anvil, records, deliveries: receiver.deliveries, timeoutMs: 180_000 });
    console.log(`settled in ${seconds(settled.ms)} (sessions still open ${settled.pendingSessions}, events undelivered ${settled.undeliveredEvents})`);

    // Time to recover per role, from the kill: the first success of each after it.
    const db = new pg.Client({ connectionString: cluster.standby.url });
    await db.connect();
    const engineFirst = await db.query<{ at: Date | null }>('SELECT min(created_at) AS at FROM events WHERE livemode AND created_at > $1', [
      new Date(promotedAt),
    ]);
    await db.end();
    const apiBack = [...readers.successes, ...records.map((record) => record.acknowledgedAt ?? 0)].filter((at) => at > promotedAt).sort((a, b) => a - b)[0];
    // The new primary's checkpoint moving (async: from wherever the lost WAL left it).
    const baseline = progress.find((point) => point.at > promotedAt);
    const ingestBack = progress.find((point) => baseline && point.at > baseline.at && point.block > baseline.block)?.at;
    const rescanned = baseline ? blockAtKill - baseline.block : 0n;
    const deliveryBack = receiver.deliveries
      .filter((delivery) => Date.parse(delivery.timestamp) > promotedAt)
      .sort((a, b) => a.receivedAt - b.receivedAt)[0]?.receivedAt;
    const fromKill = (at: number | undefined) => (at === undefined ? undefined : at - killAt);
    console.log(
      `recovery from the kill (promotion at +${seconds(promotedAt - killAt)}): api ${seconds(fromKill(apiBack))}, ingest (checkpoint moving) ${seconds(fromKill(ingestBack))}, worker engine (first state change) ${seconds(fromKill(engineFirst.rows[0]!.at?.getTime()))}, worker delivery (first new webhook) ${seconds(fromKill(deliveryBack))}`,
    );
    console.log(
      `checkpoint at the kill ${blockAtKill} (chain head ${anvilHeadAtKill}); on the new primary ${baseline?.block ?? '?'}: ${rescanned} blocks re-scanned from the chain`,
    );
    console.log(`role restarts (process exits): ${fleet.roles.map((role) => `${role.name} ${role.crashes}`).join(', ')}`);
    console.log(
      `traffic: ${records.filter((r) => r.txHash).length} payments (${acknowledgedBeforeKill} sessions acknowledged before the kill), ${readers.successes.length} reads ok, ${readers.failures.length} failed`,
    );

    const result = await auditLedger({ databaseUrl: cluster.standby.url, anvil, token: usdc, wallet: WALLET, records, deliveries: receiver.deliveries });
    // Async: what the standby never received is the RPO (sessions acknowledged and events delivered in the lag window).
    failing.push(...reportAudit(result, mode === 'async' ? ['session.lost', 'event.phantom', 'event.duplicated'] : []).map((kind) => `${mode}: ${kind}`));
    if (settled.pendingSessions > 0) failing.push(`${mode}: ${settled.pendingSessions} paid sessions never confirmed`);
  } finally {
    await fleet.stop();
    await receiver.close();
    await anvil.stop();
    await rw.close();
    await cluster.close();
    if (failing.length === 0 && !process.env.CHAOS_KEEP_LOGS) fs.rmSync(logDir, { recursive: true, force: true });
    else console.log(`role logs kept in ${logDir}`);
  }
  return failing;
}

if (!hasDebianPostgres()) {
  console.error('needs Debian PostgreSQL 15 (apt-get install -y postgresql): pg_basebackup and streaming replication');
  process.exit(2);
}
const modes = values.mode === 'both' ? (['sync', 'async'] as const) : [values.mode as 'sync' | 'async'];
const failing: string[] = [];
for (const mode of modes) failing.push(...(await runOnce(mode)));
console.log(failing.length === 0 ? '\nPASS' : `\nFAIL: ${failing.join('; ')}`);
process.exit(failing.length === 0 ? 0 : 1);
