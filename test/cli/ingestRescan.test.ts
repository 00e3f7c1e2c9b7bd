import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { main, type Io } from '../../src/cli/main.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createLeaderLocks } from '../../src/ingest/leader.ts';
import { EVM_INGEST_LOCK_CLASS } from '../../src/store/lockKeys.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { merchantWithWallets, processedBlock, startIngest, transfers, waitFor, waitProcessed } from '../helpers/evmIngest.ts';

/**
 * `svc ingest rescan` and `svc ingest status` against real Postgres; the EVM rescan end to end
 * with the real ingester on anvil: a transfer lost from the database (a restored older backup)
 * comes back, the others are not duplicated.
 */
const db = useTestDatabase('cli_ingest');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-ingest-'));
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const WALLET = getAddress('0x7777777777777777777777777777777777777777');
let anvil: Anvil;

async function svc(env: Record<string, string>, ...argv: string[]) {
  let out = '';
  let err = '';
  const io: Io = {
    env: { DATABASE_URL: db.connectionString, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    out: (text) => (out += text),
    err: (text) => (err += text),
  };
  const code = await main(argv, io);
  return { code, out, err, json: () => JSON.parse(out) };
}

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await merchantWithWallets(db.store, chain, [WALLET]);
});
afterAll(async () => {
  await anvil?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('svc ingest rescan (EVM)', () => {
  test('a transfer missing from the database is ingested again from the given block; stored ones are not duplicated; a second run changes nothing', async () => {
    const run = startIngest({ db, chain, http: [anvil.rpcUrl] });
    // Its first start begins at the head: pay only once it has a checkpoint.
    await waitFor(() => processedBlock(db.store, chain), 20_000, 'the first checkpoint');
    const first = await anvil.pay(usdc, WALLET, 1_000_000n);
    const second = await anvil.pay(usdc, WALLET, 2_000_000n);
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    await waitFor(async () => (await transfers(db.store, chain)).length === 2, 10_000, 'both transfers');

    // While a process leads the chain the rescan is refused and changes nothing.
    const env = { SVC_POLYGON_RPC_URL: anvil.rpcUrl };
    const refused = await svc(env, 'ingest', 'rescan', '--chain', chain, '--from-block', '1', '--json');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.err).error).toContain('polygon is being ingested by a process at');
    expect(JSON.parse(refused.err).error).toContain('stop the ingest role first');
    await run.ingest.stop();

    // A restored backup that lacks the first transfer (its checkpoint is newer than the data).
    const lost = (await transfers(db.store, chain)).find((row) => row.tx_hash === first)!;
    await db.store.query('DELETE FROM transfers WHERE tx_hash = $1', [first]);
    const before = (await processedBlock(db.store, chain))!;

    const rescan = await svc(env, 'ingest', 'rescan', '--chain', chain, '--from-block', String(lost.block_number), '--json');
    expect(rescan.code, rescan.err).toBe(0);
    expect(rescan.json()).toMatchObject({
      chain,
      kind: 'evm',
      changed: true,
      fromBlock: String(lost.block_number),
      previousProcessedBlock: String(before),
      processedBlock: String(lost.block_number - 1n),
    });
    expect(rescan.json().checkedBlock.number).toBe(String(before));
    expect(await processedBlock(db.store, chain)).toBe(lost.block_number - 1n);
    const again = await svc(env, 'ingest', 'rescan', '--chain', chain, '--from-block', String(lost.block_number), '--json');
    expect(again.json()).toMatchObject({ changed: false, processedBlock: String(lost.block_number - 1n) });

    const rerun = startIngest({ db, chain, http: [anvil.rpcUrl] });
    try {
      await waitProcessed(db.store, chain, before);
      const rows = await transfers(db.store, chain);
      expect(rows.map((row) => [row.tx_hash, row.amount, row.status])).toEqual([
        [first, '1000000', 'observed'],
        [second, '2000000', 'observed'],
      ]);
    } finally {
      await rerun.ingest.stop();
    }
  });

  test('a stored block the node no longer has (a reorg while nothing ingested) refuses the rescan; so does a chain without an RPC URL here', async () => {
    const { rows } = await db.store.query<{ number: bigint; hash: string }>(
      "SELECT number, hash FROM chain_blocks WHERE livemode AND chain = 'polygon' ORDER BY number DESC LIMIT 1",
    );
    const top = rows[0]!;
    const before = await processedBlock(db.store, chain);
    await db.store.query("UPDATE chain_blocks SET hash = '0x' || repeat('ab', 32) WHERE livemode AND chain = 'polygon' AND number = $1", [top.number]);
    try {
      const refused = await svc({ SVC_POLYGON_RPC_URL: anvil.rpcUrl }, 'ingest', 'rescan', '--chain', chain, '--from-block', '1');
      expect(refused.code).toBe(1);
      expect(refused.err).toContain('the chain reorganised since it was ingested');
      expect(await processedBlock(db.store, chain)).toBe(before);
    } finally {
      await db.store.query("UPDATE chain_blocks SET hash = $2 WHERE livemode AND chain = 'polygon' AND number = $1", [top.number, top.hash]);
    }
    const noRpc = await svc({}, 'ingest', 'rescan', '--chain', chain, '--from-block', '1');
    expect(noRpc.code).toBe(1);
    expect(noRpc.err).toContain('set SVC_POLYGON_RPC_URL for this command');
  });

  test('bad arguments are usage errors (exit 2) and change nothing', async () => {
    expect((await svc({}, 'ingest', 'rescan', '--chain', 'dogecoin', '--from-block', '1')).err).toContain('--chain must be one of');
    const bad = await svc({}, 'ingest', 'rescan', '--chain', chain, '--from-block', '12x', '--json');
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.err)).toEqual({ error: '--from-block must be a whole block (or slot) number' });
    const help = await svc({}, 'ingest', 'rescan', '--help');
    expect(help.out).toContain('Usage: svc ingest rescan --chain CHAIN --from-block N');
  });
});

describe('svc ingest rescan (solana)', () => {
  test('token accounts whose cursor is at or above the slot go back to their newest finalized signature below it; the floor comes down to it', async () => {
    const account = (address: string, cursorSlot: number | null, floor: number) =>
      db.store.query(
        `INSERT INTO solana_token_accounts (address, owner, mint, token_program, associated, cursor_signature, cursor_slot, floor_slot)
         VALUES ($1, 'Owner1111111111111111111111111111111111111', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', true, $2, $3, $4)`,
        [address, cursorSlot === null ? null : `sig-${address}-${cursorSlot}`, cursorSlot, floor],
      );
    const signature = (address: string, slot: number, commitment = 'finalized') =>
      db.store.query('INSERT INTO solana_signatures (token_account, signature, slot, commitment, failed) VALUES ($1, $2, $3, $4, false)', [
        address,
        `sig-${address}-${slot}`,
        slot,
        commitment,
      ]);
    await account('AccA', 500, 100);
    for (const slot of [200, 300, 450, 500]) await signature('AccA', slot);
    await signature('AccA', 390, 'confirmed'); // not final: never a cursor
    await account('AccB', 350, 100); // already below: untouched
    await account('AccC', 900, 800); // nothing below 400: its whole history from 400 is listed again
    await signature('AccC', 900);

    const result = await svc({}, 'ingest', 'rescan', '--chain', 'solana', '--from-block', '400', '--json');
    expect(result.code, result.err).toBe(0);
    expect(result.json()).toMatchObject({ chain: 'solana', kind: 'solana', changed: true, fromSlot: '400', tokenAccounts: 2 });
    const { rows } = await db.store.query(
      'SELECT address, cursor_signature, cursor_slot::int AS cursor_slot, floor_slot::int AS floor_slot FROM solana_token_accounts ORDER BY address',
    );
    expect(rows).toEqual([
      { address: 'AccA', cursor_signature: 'sig-AccA-300', cursor_slot: 300, floor_slot: 100 },
      { address: 'AccB', cursor_signature: 'sig-AccB-350', cursor_slot: 350, floor_slot: 100 },
      { address: 'AccC', cursor_signature: null, cursor_slot: null, floor_slot: 400 },
    ]);
    expect((await svc({}, 'ingest', 'rescan', '--chain', 'solana', '--from-block', '400', '--json')).json()).toMatchObject({
      changed: false,
      tokenAccounts: 0,
    });
  });
});

describe('svc ingest status', () => {
  test('names the session holding each chain’s lock and how far the checkpoint trails the head', async () => {
    await db.store.query(
      "INSERT INTO chain_heads (livemode, chain, head_block, processed_block, finalized_block, head_seen_at) VALUES (true, 'base', 1000, 990, 950, now() - interval '5 seconds')",
    );
    const locks = createLeaderLocks({ connection: { connectionString: db.connectionString }, logger: createLogger({ level: 'silent' }) });
    const solanaLock = new pg.Client({ connectionString: db.connectionString, application_name: 'svc-test-solana' });
    await solanaLock.connect();
    try {
      const lease = await locks.tryAcquire([EVM_INGEST_LOCK_CLASS, 8453], 'base');
      expect(lease).toBeDefined();
      await solanaLock.query('SELECT pg_advisory_lock($1, $2)', [0x73766300, 0x736f6c]);
      const { rows } = await db.store.query<{ pid: number }>("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 8453 AND granted");
      const status = await svc({ SVC_BASE_RPC_URL: 'http://127.0.0.1:9' }, 'ingest', 'status', '--json');
      expect(status.code, status.err).toBe(0);
      const byChain = Object.fromEntries((status.json() as { chain: string }[]).map((row) => [row.chain, row])) as Record<string, any>;
      expect(byChain.base).toMatchObject({
        configuredHere: true,
        leader: { pid: rows[0]!.pid, applicationName: 'svc-ingest-leader' },
        headBlock: '1000',
        processedBlock: '990',
        behindBlocks: '10',
      });
      expect(byChain.base.headSeenSecondsAgo).toBeGreaterThanOrEqual(5);
      expect(byChain.solana).toMatchObject({ leader: { applicationName: 'svc-test-solana' }, processedBlock: null, solana: { tokenAccounts: 3 } });
      // polygon has a checkpoint (the rescan tests) but nobody leads it now.
      expect(byChain.polygon).toMatchObject({ configuredHere: false, leader: null });
      const human = await svc({}, 'ingest', 'status');
      expect(human.out).toContain('polygon   NO LEADER');
      expect(human.out).toMatch(/base {6}leader pid \d+ at 127\.0\.0\.1/);
    } finally {
      await locks.close();
      await solanaLock.end();
    }
  });
});
