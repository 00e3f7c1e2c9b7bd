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
import pg from 'pg';
import { getAddress, type Address } from 'viem';
import { finishRun, runGuarded, startChaosFleet } from './lib/chaosFleet.ts';
import { runOptions } from './lib/cli.ts';
import { hasDebianPostgres, startPgCluster } from './lib/pgCluster.ts';
import { createTcpRouter } from './lib/tcpRouter.ts';
import { runPayments, startMiner, startReaders, type PaymentRecord } from './lib/traffic.ts';

const options = runOptions({ mode: 'both', before: 20, after: 20, lag: 3, detect: 2, concurrency: 3 });
const WALLET: Address = getAddress('0x5555555555555555555555555555555555555555');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number | undefined) => (ms === undefined ? 'never' : `${(ms / 1000).toFixed(1)} s`);

async function runOnce(mode: 'sync' | 'async'): Promise<string[]> {
  console.log(`\n== failover, ${mode} standby ==`);
  const cluster = await startPgCluster({ mode });
  const rw = await createTcpRouter(cluster.primary.port);
  let run: Awaited<ReturnType<typeof startChaosFleet>>;
  try {
    run = await startChaosFleet({
      label: `failover-${mode}`,
      databaseUrl: rw.urlFor(cluster.primary.url),
      wallet: WALLET,
      names: ['api', 'ingest-1', 'ingest-2', 'worker'],
    });
  } catch (error) {
    await rw.close();
    await cluster.close();
    throw error;
  }
  const { anvil, fleet, key, payer, receiver } = run;
  return runGuarded(
    run,
    async (failing) => {
      const miner = startMiner(anvil, 250);
      const records: PaymentRecord[] = [];
      let stopped = false;
      const traffic = runPayments({
        apiUrl: () => fleet.apiUrl,
        key,
        wallet: WALLET,
        send: payer.send,
        count: Number.POSITIVE_INFINITY,
        concurrency: options.concurrency,
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
            const { rows } = await client.query<{ b: string | null }>(
              "SELECT processed_block::text AS b FROM chain_heads WHERE livemode AND chain = 'polygon'",
            );
            if (rows[0]?.b) progress.push({ at: Date.now(), block: BigInt(rows[0].b) });
          } catch {}
          await client.end().catch(() => {});
          await sleep(200);
        }
      })();

      await sleep(options.before * 1000);
      let lagBytes = 0n;
      if (mode === 'async') {
        cluster.replicationLink.down();
        await sleep(options.lag * 1000);
        lagBytes = await cluster.lagBytes();
      }
      const acknowledgedBeforeKill = records.filter((record) => record.sessionId).length;
      const killAt = Date.now();
      cluster.primary.kill();
      rw.route(undefined);
      const blockAtKill = progress.at(-1)?.block ?? 0n;
      const anvilHeadAtKill = await anvil.blockNumber();
      await sleep(options.detect * 1000);
      const promoteMs = await cluster.promote();
      rw.route(cluster.standby.port);
      const promotedAt = Date.now();
      console.log(
        `killed the primary at +0 s; standby promoted at +${seconds(promotedAt - killAt)} (pg_promote ${promoteMs.toFixed(0)} ms)${mode === 'async' ? `; WAL not on the standby at the kill: ${lagBytes} bytes` : ''}`,
      );
      await sleep(options.after * 1000);
      stopped = true;
      await traffic;
      await readers.stop();
      watching = false;
      await watcher;
      await miner.stop();

      // Async: what the standby never received is the RPO (sessions acknowledged and events delivered in the lag window).
      const { failing: audit, settled } = await run.settleAndAudit({
        records,
        timeoutMs: 180_000,
        databaseUrl: cluster.standby.url,
        allowed: mode === 'async' ? ['session.lost', 'event.phantom', 'event.duplicated'] : [],
      });
      failing.push(...audit.map((kind) => `${mode}: ${kind}`));
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
    },
    async () => {
      await rw.close();
      await cluster.close();
    },
  );
}

if (!hasDebianPostgres()) {
  console.error('needs Debian PostgreSQL 15 (apt-get install -y postgresql): pg_basebackup and streaming replication');
  process.exit(2);
}
const modes = options.mode === 'both' ? (['sync', 'async'] as const) : [options.mode as 'sync' | 'async'];
const failing: string[] = [];
for (const mode of modes) failing.push(...(await runOnce(mode)));
console.log();
finishRun(failing);
