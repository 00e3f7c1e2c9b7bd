/**
 * Reorgs (issue 30, run 3): `--size` random reorgs on anvil (`anvil_reorg`: the last `depth` blocks
 * replaced by new ones at the same heights) during live payments through the fleet (api, ingest,
 * worker processes). Depths from 1 to `--max-depth` (default 40: past polygon's 32-block
 * confirmation rule, above anvil's finalized tag at head - 64). Each dropped payment is re-included
 * (the same transfer sent again), replaced (the same amount in a new transaction from another
 * sender) or dropped for good, a third each. After each reorg the run waits for the ingester to
 * rewind (so each reorg is seen on its own). The audit: no session `confirmed`/`settled` without
 * its money on the canonical chain, every final state exact to the base unit (lib/ledgerAudit.ts),
 * every reorg counted (`svc_ingest_reorgs_total`) and every one deeper than the confirmation rule
 * alerted (`svc_ingest_deep_reorgs_total`, the SvcIngestDeepReorg alert).
 *
 *   npx tsx bench/chaos/reorgs.ts [--size 1000] [--max-depth 40] [--max-minutes 0] [--new-heads 1]
 *
 * `--max-minutes` (0: none) stops making reorgs once that many minutes have passed since the
 * start, then settles and audits the reorgs made (the figure says how many): on a loaded machine,
 * the largest run that fits the time there is. `--new-heads 1` (the default) gives the ingester
 * anvil's WebSocket, as production runs with one: it catches up on each new head instead of every
 * 2 s (polygon's poll interval), about twice as many reorgs a minute; `--new-heads 0` polls.
 */
import pg from 'pg';
import { getAddress, parseAbiItem, type Address, type Hash } from 'viem';
import { loadChains } from '../../src/internal/chains.ts';
import { freePort, PAYER, tokenAbi } from '../../test/helpers/anvil.ts';
import { benchDatabase } from '../lib.ts';
import { finishRun, runGuarded, startChaosFleet } from './lib/chaosFleet.ts';
import { runOptions } from './lib/cli.ts';
import { runPayments, type PaymentRecord } from './lib/traffic.ts';

const options = runOptions({ size: 1000, 'max-depth': 40, concurrency: 2, 'max-minutes': 0, 'new-heads': 1 });
const SIZE = options.size;
const MAX_DEPTH = options['max-depth'];
const CONFIRMED = BigInt(loadChains().polygon.confirmations.confirmed);
const WALLET: Address = getAddress('0x7777777777777777777777777777777777777777');
const REPLACER: Address = getAddress('0x000000000000000000000000000000000000bEEF');
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
/** How long the run waits for the ingester to store a branch, and to count a reorg of it. */
const CATCH_UP_MS = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reorg depths: mostly shallow, a quarter within the confirmation rule, some past it. */
function pickDepth(): number {
  const roll = Math.random();
  if (roll < 0.6) return 1 + Math.floor(Math.random() * 3);
  if (roll < 0.85) return 4 + Math.floor(Math.random() * (Number(CONFIRMED) - 3));
  return Number(CONFIRMED) + 1 + Math.floor(Math.random() * (MAX_DEPTH - Number(CONFIRMED)));
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes('chain="polygon"'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

const started = performance.now();
const database = await benchDatabase('chaos-reorgs', await freePort());
const run = await startChaosFleet({
  label: 'chaos-reorgs',
  databaseUrl: database.connectionString,
  wallet: WALLET,
  names: ['api', 'ingest', 'worker'],
  newHeads: options['new-heads'] === 1,
}).catch(async (error) => {
  await database.close();
  throw error;
});
const { anvil, usdc, fleet, key, payer } = run;
const failing = await runGuarded(
  run,
  async (failing) => {
    // The replacing sender's tokens and gas first, then a chain longer than the deepest reorg: a
    // reorg that reached the funding would take it back (anvil's rollback drops a setBalance too).
    await anvil.waitMined(await anvil.mint(usdc, REPLACER, 10n ** 30n));
    await anvil.client.setBalance({ address: REPLACER, value: 10n ** 24n });
    await anvil.mine(70);
    // anvil.mint stops impersonating its minter, the payer's account; and a reorg's rollback was
    // seen to drop an impersonation (the payer's sends then fail with "No Signer available"), so
    // both senders are impersonated again after every reorg.
    const impersonate = async () => {
      await anvil.client.impersonateAccount({ address: PAYER });
      await anvil.client.impersonateAccount({ address: REPLACER });
    };
    await impersonate();
    // Payments pause while a reorg is made: the run knows exactly which transfers it dropped.
    // A send counts as in flight from the gate to its receipt, and a reorg waits for none to be
    // in flight: a send still landing while the reorg is planned would shift the heights it
    // replaces, or be dropped without being in the list of what it dropped (the last round's six
    // reorgs counted but not made, and one payment paid untracked). Its receipt, not its answer:
    // even automining, anvil answers eth_sendTransaction before the block is in place, and a
    // payment mined after the run read the head was the block a depth-1 reorg replaced, one the
    // ingester had never stored (three reorgs never counted in a 1,000-reorg run).
    const mined = async (hash: Hash) => {
      await anvil.client.waitForTransactionReceipt({ hash, pollingInterval: 10, timeout: 30_000 });
      return hash;
    };
    let gate: Promise<void> = Promise.resolve();
    let inFlight = 0;
    const send = async (to: Address, amount: bigint) => {
      for (;;) {
        await gate;
        // The gate may have closed again between its opening and this send's turn.
        if (gateOpen) break;
      }
      inFlight++;
      try {
        return await mined(await payer.send(to, amount));
      } finally {
        inFlight--;
      }
    };
    let gateOpen = true;
    const records: PaymentRecord[] = [];
    let stopped = false;
    let trafficError: Error | undefined;
    const traffic = runPayments({
      apiUrl: () => fleet.apiUrl,
      key,
      wallet: WALLET,
      send,
      count: Number.POSITIVE_INFINITY,
      concurrency: options.concurrency,
      runId: `reorgs-${Date.now()}`,
      records,
      paceMs: 50,
      stop: () => stopped,
    }).catch((error) => {
      // Failing here, not as an unhandled rejection that would leave the fleet and anvil running.
      trafficError = error as Error;
    });
    const db = new pg.Client({ connectionString: database.connectionString });
    db.on('error', () => {});
    await db.connect();
    const processed = async () =>
      BigInt((await db.query("SELECT processed_block::text AS b FROM chain_heads WHERE livemode AND chain = 'polygon'")).rows[0]?.b ?? '-1');
    /** The ingester's stored blocks of [from, to] (chain_blocks), as `number hash` for a report. */
    const storedBlocks = async (from: bigint, to: bigint) => {
      const { rows } = await db.query(
        "SELECT number::text, hash FROM chain_blocks WHERE livemode AND chain = 'polygon' AND number BETWEEN $1 AND $2 ORDER BY number",
        [String(from), String(to)],
      );
      return rows.map((row) => `${row.number} ${row.hash.slice(0, 10)}`).join(', ') || 'none';
    };
    const byHash = new Map<string, PaymentRecord>();
    const tally = { reorgs: 0, deep: 0, dropped: 0, reincluded: 0, replaced: 0, skipped: 0, maxDepth: 0 };
    const ingestMetrics = fleet.byName('ingest').metricsUrl!;
    const deadline = options['max-minutes'] > 0 ? started + options['max-minutes'] * 60_000 : Number.POSITIVE_INFINITY;
    // SIZE counts reorgs made: an attempt skipped (the ingester behind) is tried again.
    let lastCount = await metric(ingestMetrics, 'svc_ingest_reorgs_total');
    let lastAttempt = 'none';
    for (let attempt = 0; tally.reorgs < SIZE; attempt++) {
      if (performance.now() > deadline) {
        console.log(`  --max-minutes ${options['max-minutes']} reached after ${tally.reorgs} of ${SIZE} reorgs: settling and auditing those`);
        break;
      }
      if (trafficError) throw new Error(`payments stopped: ${trafficError.message.split('\n')[0]}`);
      await sleep(50 + Math.random() * 200);
      let openGate!: () => void;
      gate = new Promise((resolve) => (openGate = resolve));
      gateOpen = false;
      const open = () => {
        gateOpen = true;
        openGate();
      };
      while (inFlight > 0) await sleep(5); // sends already past the gate land first
      // A few empty blocks on top, mined with the gate closed and every send mined: nothing but
      // the run adds a block from here to the reorg, which checks that it replaced up to the head
      // read below (it caught a payment mined after its answer).
      await anvil.mine(1 + Math.floor(Math.random() * 3));
      const head = await anvil.blockNumber();
      // The ingester must have seen the branch it is about to lose, else the reorg is invisible to
      // it by design (nothing stored to undo): a reorg it has not caught up to is skipped and
      // reported, not made (the last round's 10 s wait made 104 reorgs it could not see).
      const caughtUp = Date.now() + CATCH_UP_MS;
      while ((await processed()) < head && Date.now() < caughtUp) await sleep(25);
      if ((await processed()) < head) {
        tally.skipped++;
        open();
        continue;
      }
      const depth = Math.min(pickDepth(), Number(head) - 1);
      const lost = await anvil.client.getLogs({ address: usdc, event: TRANSFER, args: { to: WALLET }, fromBlock: head - BigInt(depth) + 1n, toBlock: head });
      const countedBefore = await metric(ingestMetrics, 'svc_ingest_reorgs_total');
      // A count that moved since the last attempt ended: a reorg the ingester saw that this run
      // did not make, said with what came before. The 922-reorg run of 2026-11-27 counted 113
      // such, each after an attempt that seemed to change no block: anvil had answered
      // anvil_reorg before building its blocks and built them after payments went on.
      if (countedBefore !== lastCount)
        console.log(
          `  the ingester counted ${countedBefore - lastCount} reorg(s) between attempts (before attempt ${attempt} at head ${head}; the last: ${lastAttempt})`,
        );
      // anvil.reorg returns once the new blocks are in place, the lowest holding a marker
      // transaction: every attempt replaces all `depth` blocks (test/helpers/anvil.ts).
      const storedBefore = await storedBlocks(head - BigInt(depth), head);
      const { head: reorgedAt, replaced: replacedHash } = await anvil.reorg(depth);
      await impersonate();
      if (reorgedAt !== head) throw new Error(`the chain moved under the run: a reorg meant at ${head} was made at ${reorgedAt}`);
      tally.reorgs++;
      tally.maxDepth = Math.max(tally.maxDepth, depth);
      if (BigInt(depth) > CONFIRMED) tally.deep++;
      for (const record of records) if (record.txHash) byHash.set(record.txHash.toLowerCase(), record);
      for (const log of lost) {
        const record = byHash.get(log.transactionHash!.toLowerCase());
        if (!record) continue;
        const action = Math.random();
        let hash: Hash | undefined;
        if (action < 1 / 3) {
          hash = await payer.send(WALLET, log.args.value!);
          tally.reincluded++;
        } else if (action < 2 / 3) {
          hash = await anvil.client.writeContract({
            account: REPLACER,
            chain: anvil.client.chain,
            address: usdc,
            abi: tokenAbi,
            functionName: 'transfer',
            args: [WALLET, log.args.value!],
            gas: 100_000n,
          });
          tally.replaced++;
        } else tally.dropped++;
        if (hash) {
          await mined(hash);
          byHash.delete(record.txHash!.toLowerCase());
          record.txHash = hash;
          record.sentHashes = [...(record.sentHashes ?? []), hash];
        }
      }
      open();
      // Each reorg on its own: wait until the ingester has counted it (its rewind committed). Its
      // checkpoint alone says nothing: a reorg that re-sends nothing leaves the head where it was.
      const rewound = Date.now() + CATCH_UP_MS;
      while ((await metric(ingestMetrics, 'svc_ingest_reorgs_total')) <= countedBefore && Date.now() < rewound) await sleep(50);
      const countedAfter = await metric(ingestMetrics, 'svc_ingest_reorgs_total');
      lastCount = countedAfter;
      lastAttempt = `head ${head}, depth ${depth}, ${lost.length} payments dropped`;
      if (countedAfter !== countedBefore + 1) {
        console.log(`  reorg at ${head} (depth ${depth}, attempt ${attempt}): the ingester's count moved by ${countedAfter - countedBefore}, not 1`);
        // What the ingester holds of the replaced heights against the chain: a stored block of the
        // old branch not rewound, the new one, or none (pruned as final).
        const lowest = head - BigInt(depth) + 1n;
        const canonical = await anvil.client.getBlock({ blockNumber: lowest });
        console.log(
          `    block ${lowest}: replaced ${replacedHash.slice(0, 10)}, now ${canonical.hash.slice(0, 10)}; stored before the reorg: ${storedBefore}; now: ${await storedBlocks(lowest - 1n, head + 1n)}; processed ${await processed()}`,
        );
      }
      if (tally.reorgs % Math.max(1, Math.floor(SIZE / 10)) === 0)
        console.log(`  ${tally.reorgs} reorgs (${attempt + 1} attempts), ${records.length} payments, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    stopped = true;
    await traffic;
    if (trafficError) throw new Error(`payments stopped: ${(trafficError as Error).message.split('\n')[0]}`);
    await db.end();
    const ingest = fleet.byName('ingest');
    const counted = await metric(ingest.metricsUrl!, 'svc_ingest_reorgs_total');
    const alerted = await metric(ingest.metricsUrl!, 'svc_ingest_deep_reorgs_total');
    const landed = new Set(
      (await anvil.client.getLogs({ address: usdc, event: TRANSFER, args: { to: WALLET }, fromBlock: 0n, toBlock: 'latest' })).map((log) =>
        log.transactionHash!.toLowerCase(),
      ),
    );
    // Every transfer to the wallet is one the run sent: a transfer no send of the run returned
    // would be money the audit cannot attribute (a send that failed after its transaction landed).
    const sent = new Set(records.flatMap((record) => (record.sentHashes ?? []).map((hash) => hash.toLowerCase())));
    const untracked = [...landed].filter((hash) => !sent.has(hash));
    if (untracked.length > 0) failing.push(`${untracked.length} transfers on the chain that no send of the run returned: ${untracked.slice(0, 5).join(', ')}`);
    const { failing: audit, settled } = await run.settleAndAudit({ records, timeoutMs: 300_000 });
    console.log(
      `reorgs: ${tally.reorgs} (deepest ${tally.maxDepth}, ${tally.deep} deeper than the ${CONFIRMED}-block rule) during ${records.length} payments; dropped payments: ${tally.reincluded} re-included, ${tally.replaced} replaced, ${tally.dropped} dropped for good`,
    );
    console.log(
      `ingester: ${counted} reorgs counted, ${alerted} deep-reorg alerts; ${tally.skipped} reorgs skipped (the ingester had not stored the branch within ${CATCH_UP_MS / 1000} s); settled in ${(settled.ms / 1000).toFixed(0)} s`,
    );
    failing.push(...audit);
    if (ingest.crashes > 0) failing.push('the ingest process restarted: its counters do not cover the run');
    if (alerted !== tally.deep) failing.push(`${tally.deep} reorgs deeper than the confirmation rule, ${alerted} alerted`);
    if (counted !== tally.reorgs) failing.push(`${tally.reorgs} reorgs made, ${counted} counted by the ingester`);
  },
  database.close,
);
finishRun(failing, started);
