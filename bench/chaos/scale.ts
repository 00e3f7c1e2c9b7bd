/**
 * Chaos at scale (issue 30, run 2): `--size` live payments on anvil (polygon's chain id and real
 * USDC address) through the whole fleet as processes (api, two ingest, worker) on one Postgres,
 * while `--kills` SIGKILLs are spread over the run across the roles (each restarted as a pod would
 * be), the ingesters' RPC is flaky (`--rpc-failures` of requests fail: 502, 429, cut connections)
 * with outages, and the webhook receiver is down for `--receiver-outage` seconds (503 with
 * Retry-After). Ends with the ledger audit (lib/ledgerAudit.ts): exits non-zero on any defect.
 *
 *   npx tsx bench/chaos/scale.ts [--size 10000] [--kills 50] [--concurrency 12] [--max-minutes 0]
 *
 * `--max-minutes` (0: none) stops taking new payments once that many minutes have passed since
 * the start (the faults spread over `--size` stop with them), then settles and audits what was
 * made: on a loaded machine, the largest run that fits the time there is.
 *
 * DATABASE_URL to use an existing (empty) database; otherwise an embedded Postgres in a temporary folder.
 */
import { getAddress, type Address } from 'viem';
import { freePort } from '../../test/helpers/anvil.ts';
import { benchDatabase } from '../lib.ts';
import { finishRun, runGuarded, startChaosFleet } from './lib/chaosFleet.ts';
import { runOptions } from './lib/cli.ts';
import { startFlakyRpc } from './lib/flakyRpc.ts';
import { runPayments, startMiner, startReaders, type PaymentRecord } from './lib/traffic.ts';

const options = runOptions({ size: 10_000, kills: 50, concurrency: 12, 'rpc-failures': 0.1, 'rpc-outages': 3, 'receiver-outage': 30, 'max-minutes': 0 });
const SIZE = options.size;
const KILLS = options.kills;
const WALLET: Address = getAddress('0x6666666666666666666666666666666666666666');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const started = performance.now();
const database = await benchDatabase('chaos-scale', await freePort());
const run = await startChaosFleet({
  label: 'chaos-scale',
  databaseUrl: database.connectionString,
  wallet: WALLET,
  names: ['api', 'ingest-1', 'ingest-2', 'worker'],
  rpc: (upstream) => startFlakyRpc({ upstream, failureRate: options['rpc-failures'] }),
}).catch(async (error) => {
  await database.close();
  throw error;
});
const { anvil, fleet, key, payer, receiver, rpc } = run;
const failing = await runGuarded(
  run,
  async (failing) => {
    const miner = startMiner(anvil, 250);
    const records: PaymentRecord[] = [];
    const trafficStarted = performance.now();
    let done = false;
    const traffic = runPayments({
      apiUrl: () => fleet.apiUrl,
      key,
      wallet: WALLET,
      send: payer.send,
      count: SIZE,
      stop: () => options['max-minutes'] > 0 && performance.now() - started > options['max-minutes'] * 60_000,
      concurrency: options.concurrency,
      runId: `scale-${Date.now()}`,
      records,
    }).finally(() => (done = true));
    const readers = startReaders({ apiUrl: () => fleet.apiUrl, key, records, readers: 1, everyMs: 100 });

    // The faults, spread over the payments: a kill every SIZE/KILLS payments, RPC outages and one
    // receiver outage at fixed fractions of the run.
    const kills: Record<string, number> = {};
    const faults = (async () => {
      const paid = () => records.filter((record) => record.txHash).length;
      const outagesAt = Array.from({ length: options['rpc-outages'] }, (_unused, i) => (i + 1) / (options['rpc-outages'] + 1));
      let receiverDone = false;
      for (let k = 0; k < KILLS && !done; k++) {
        while (!done && paid() < ((k + 1) * SIZE) / (KILLS + 1)) await sleep(100);
        if (done) break;
        const role = fleet.roles[Math.floor(Math.random() * fleet.roles.length)]!;
        kills[role.name] = (kills[role.name] ?? 0) + 1;
        await role.kill();
        const fraction = paid() / SIZE;
        while (outagesAt.length > 0 && fraction >= outagesAt[0]!) {
          outagesAt.shift();
          rpc.outage(5_000);
        }
        if (!receiverDone && fraction >= 0.4) {
          receiverDone = true;
          receiver.down();
          setTimeout(() => receiver.up(), options['receiver-outage'] * 1000);
        }
      }
    })();
    let lastReport = 0;
    const progress = setInterval(() => {
      const paid = records.filter((record) => record.txHash).length;
      if (paid - lastReport >= SIZE / 10) {
        lastReport = paid;
        console.log(`  ${paid} paid, ${Object.values(kills).reduce((a, b) => a + b, 0)} kills, ${((performance.now() - trafficStarted) / 1000).toFixed(0)} s`);
      }
    }, 2_000);
    await traffic;
    await faults;
    clearInterval(progress);
    receiver.up();
    await readers.stop();
    await miner.stop();
    const trafficS = (performance.now() - trafficStarted) / 1000;
    const { failing: audit, settled } = await run.settleAndAudit({ records, timeoutMs: 600_000 });
    const killed = Object.entries(kills)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
    console.log(
      `scale: ${records.filter((r) => r.txHash).length} payments in ${trafficS.toFixed(0)} s (${(records.filter((r) => r.txHash).length / trafficS).toFixed(1)}/s), SIGKILLs ${Object.values(kills).reduce((a, b) => a + b, 0)} (${killed}), ` +
        `RPC requests failed ${rpc.stats.failed + rpc.stats.cut} of ${rpc.stats.forwarded + rpc.stats.failed + rpc.stats.cut}, receiver refused ${receiver.refused} deliveries while down; settled in ${(settled.ms / 1000).toFixed(0)} s`,
    );
    console.log(
      `role exits on their own: ${fleet.roles.map((role) => `${role.name} ${role.crashes}`).join(', ')}; reads ok ${readers.successes.length}, failed ${readers.failures.length}`,
    );
    failing.push(...audit);
    if (records.some((record) => record.abandoned)) failing.push('sessions never acknowledged');
  },
  database.close,
);
finishRun(failing, started);
