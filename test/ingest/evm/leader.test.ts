import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { merchantWithWallets, startIngest, transfers, waitFor, waitProcessed } from '../../helpers/evmIngest.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const svc = path.resolve(here, '../../../bin/svc.js');
const db = useTestDatabase('ingest_leader');
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const WALLET = getAddress('0x6666666666666666666666666666666666666666');

interface Daemon {
  child: ChildProcess;
  lines: Record<string, unknown>[];
}

let anvil: Anvil;
const daemons: Daemon[] = [];

/** A real daemon process running only the ingest role (`svc start --role ingest`). */
function startDaemon(index: number): Daemon {
  const child = spawn(process.execPath, [svc, 'start', '--role', 'ingest'], {
    env: {
      ...process.env,
      DATABASE_URL: db.connectionString,
      SVC_POLYGON_RPC_URL: anvil.rpcUrl,
      SVC_DATA_DIR: path.resolve(`.data/test-ingest-leader-${index}`),
      SVC_ENCRYPTION_KEY: '11'.repeat(32),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const daemon: Daemon = { child, lines: [] };
  let buffer = '';
  child.stdout!.on('data', (chunk) => {
    buffer += String(chunk);
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) if (part.startsWith('{')) daemon.lines.push(JSON.parse(part));
  });
  daemons.push(daemon);
  return daemon;
}

const leads = (daemon: Daemon) => daemon.lines.some((line) => line.msg === 'Leading this chain: ingester starting' && line.chain === chain);

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await merchantWithWallets(db.store, chain, [WALLET]);
});
afterAll(async () => {
  for (const { child } of daemons) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await anvil?.stop();
});

test('two daemon processes: one ingests a chain; SIGKILL it and the other takes over within seconds', async () => {
  const first = startDaemon(1);
  await waitFor(() => leads(first), 30_000, 'the first daemon to lead');
  const second = startDaemon(2);
  await waitFor(() => second.lines.some((line) => line.msg === 'Ingest role started'), 30_000, 'the second daemon to start');
  await waitProcessed(db.store, chain, await anvil.blockNumber());

  const before = await anvil.pay(usdc, WALLET, 1_000_000n);
  await anvil.waitMined(before);
  await waitFor(async () => (await transfers(db.store, chain)).find((row) => row.tx_hash === before), 20_000, 'the first transfer');
  // Standing by: the second process never led while the first was alive.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(leads(second)).toBe(false);

  const killedAt = Date.now();
  first.child.kill('SIGKILL');
  await waitFor(() => leads(second), 15_000, 'the standby to take over');
  const takeoverMs = Date.now() - killedAt;
  console.log(`standby took over ${takeoverMs} ms after the leader's SIGKILL`);
  expect(takeoverMs).toBeLessThan(10_000);

  const after = await anvil.pay(usdc, WALLET, 2_000_000n);
  await anvil.waitMined(after);
  const row = await waitFor(
    async () => (await transfers(db.store, chain)).find((transfer) => transfer.tx_hash === after),
    20_000,
    'the transfer after takeover',
  );
  expect(row.amount).toBe('2000000');
  expect((await transfers(db.store, chain)).filter((transfer) => transfer.status === 'observed')).toHaveLength(2);
}, 90_000);

test('a leader whose lock connection is killed stops, takes the lock again, and keeps ingesting', async () => {
  // The daemons of the test above are gone: this process is the only candidate.
  for (const { child } of daemons) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  const run = startIngest({ db, chain, http: [anvil.rpcUrl] });
  try {
    await waitFor(() => run.logs.find((line) => line.msg === 'Leading this chain: ingester starting'), 20_000, 'leadership');
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    const killed = await db.store.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'svc-ingest-leader' AND datname = current_database()",
    );
    expect(killed.rowCount).toBeGreaterThanOrEqual(1);
    await waitFor(() => run.logs.find((line) => line.msg === 'Leader lock connection lost; leases end'), 20_000, 'the lost lease');
    await waitFor(() => run.logs.lines.filter((line) => line.msg === 'Leading this chain: ingester starting').length === 2, 20_000, 'leadership again');
    const paid = await anvil.pay(usdc, WALLET, 3_000_000n);
    await anvil.waitMined(paid);
    const row = await waitFor(
      async () => (await transfers(db.store, chain)).find((transfer) => transfer.tx_hash === paid),
      20_000,
      'the transfer after re-election',
    );
    expect(row.amount).toBe('3000000');
  } finally {
    await run.ingest.stop();
  }
}, 60_000);
