/**
 * Chaos at scale (issue 30, run 2): `--size` live payments on anvil (polygon's chain id and real
 * USDC address) through the whole fleet as processes (api, two ingest, worker) on one Postgres,
 * while `--kills` SIGKILLs are spread over the run across the roles (each restarted as a pod would
 * be), the ingesters' RPC is flaky (`--rpc-failures` of requests fail: 502, 429, cut connections)
 * with outages, and the webhook receiver is down for `--receiver-outage` seconds (503 with
 * Retry-After). Ends with the ledger audit (lib/ledgerAudit.ts): exits non-zero on any defect.
 *
 *   npx tsx bench/chaos/scale.ts [--size 10000] [--kills 50] [--concurrency 12]
 *
 * DATABASE_URL to use an existing (empty) database; otherwise an embedded Postgres in a temporary folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { getAddress, type Address } from 'viem';
import { loadChains } from '../../src/internal/chains.ts';
import { freePort, startAnvil } from '../../test/helpers/anvil.ts';
import { benchDatabase } from '../lib.ts';
import { startFleet } from './lib/fleet.ts';
import { startFlakyRpc } from './lib/flakyRpc.ts';
import { auditLedger, reportAudit } from './lib/ledgerAudit.ts';
import { settle } from './lib/settle.ts';
import { liveMerchant, runPayments, startHookReceiver, startMiner, startPayer, startReaders, type PaymentRecord } from './lib/traffic.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '10000' },
    kills: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '12' },
    'rpc-failures': { type: 'string', default: '0.1' },
    'rpc-outages': { type: 'string', default: '3' },
    'receiver-outage': { type: 'string', default: '30' },
  },
});
const SIZE = Number(values.size);
const KILLS = Number(values.kills);
const WALLET: Address = getAddress('0x6666666666666666666666666666666666666666');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const started = performance.now();
const database = await benchDatabase('chaos-scale', await freePort());
const anvil = await startAnvil({ chain: 'polygon' });
await anvil.installChainTokens();
const usdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const rpc = await startFlakyRpc({ upstream: anvil.rpcUrl, failureRate: Number(values['rpc-failures']) });
const receiver = await startHookReceiver();
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chaos-scale-'));
const fleet = await startFleet({
  databaseUrl: database.connectionString,
  rpcUrls: { SVC_POLYGON_RPC_URL: rpc.url },
  names: ['api', 'ingest-1', 'ingest-2', 'worker'],
  logDir,
});
const failing: string[] = [];
try {
  const key = await liveMerchant(fleet, WALLET, receiver.url);
  const payer = await startPayer(anvil, usdc);
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
    concurrency: Number(values.concurrency),
    runId: `scale-${Date.now()}`,
    records,
  }).finally(() => (done = true));
  const readers = startReaders({ apiUrl: () => fleet.apiUrl, key, records, readers: 1, everyMs: 100 });

  // The faults, spread over the payments: a kill every SIZE/KILLS payments, RPC outages and one
  // receiver outage at fixed fractions of the run.
  const kills: Record<string, number> = {};
  const faults = (async () => {
    const paid = () => records.filter((record) => record.txHash).length;
    const outagesAt = Array.from({ length: Number(values['rpc-outages']) }, (_unused, i) => (i + 1) / (Number(values['rpc-outages']) + 1));
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
        setTimeout(() => receiver.up(), Number(values['receiver-outage']) * 1000);
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
  const settled = await settle({ databaseUrl: database.connectionString, anvil, records, deliveries: receiver.deliveries, timeoutMs: 600_000 });
  const killed = Object.entries(kills)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
  console.log(
    `scale: ${records.filter((r) => r.txHash).length} payments in ${trafficS.toFixed(0)} s (${(SIZE / trafficS).toFixed(1)}/s), SIGKILLs ${Object.values(kills).reduce((a, b) => a + b, 0)} (${killed}), ` +
      `RPC requests failed ${rpc.stats.failed + rpc.stats.cut} of ${rpc.stats.forwarded + rpc.stats.failed + rpc.stats.cut}, receiver refused ${receiver.refused} deliveries while down; settled in ${(settled.ms / 1000).toFixed(0)} s`,
  );
  console.log(
    `role exits on their own: ${fleet.roles.map((role) => `${role.name} ${role.crashes}`).join(', ')}; reads ok ${readers.successes.length}, failed ${readers.failures.length}`,
  );
  const result = await auditLedger({ databaseUrl: database.connectionString, anvil, token: usdc, wallet: WALLET, records, deliveries: receiver.deliveries });
  failing.push(...reportAudit(result));
  if (records.some((record) => record.abandoned)) failing.push('sessions never acknowledged');
  if (settled.pendingSessions > 0) failing.push(`${settled.pendingSessions} paid sessions never confirmed`);
} catch (error) {
  console.error(error);
  failing.push(`the run failed: ${(error as Error).message}`);
} finally {
  await fleet.stop();
  await receiver.close();
  await rpc.close();
  await anvil.stop();
  await database.close();
  if (failing.length === 0 && !process.env.CHAOS_KEEP_LOGS) fs.rmSync(logDir, { recursive: true, force: true });
  else console.log(`role logs in ${logDir}`);
}
console.log(`total ${((performance.now() - started) / 1000).toFixed(0)} s`);
console.log(failing.length === 0 ? 'PASS' : `FAIL: ${failing.join('; ')}`);
process.exit(failing.length === 0 ? 0 : 1);
