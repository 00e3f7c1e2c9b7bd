import type pg from 'pg';
import { CHAIN_NAMES, type ChainName, type Config } from '../internal/config.ts';
import { loadChains } from '../internal/chains.ts';
import { NonRetryableError } from '../internal/errors.ts';
import type { Sql, Store } from '../store/index.ts';
import { EVM_INGEST_LOCK_CLASS as INGEST_LOCK_CLASS, SOLANA_INGEST_LOCK as SOLANA_LOCK_KEY } from '../store/lockKeys.ts';

// What operators ask of ingest from outside the daemon (`svc ingest status`, `svc ingest rescan`):
// which process leads each chain and how far its checkpoint trails the head (from the advisory
// locks and chain_heads), and moving a checkpoint back so the next leader reads a range again.
// They run in the CLI's own process, never in an ingester.

/** The database session holding a chain's ingest lock: the leader. */
export interface IngestLeader {
  pid: number;
  /** The leader process's address as the database sees it (`null` over a Unix socket). */
  clientAddress: string | null;
  applicationName: string;
  /** When the lock's session connected: the leader took the lock at or after this time. */
  connectedAt: Date;
}

/** One chain's ingest as the database shows it. */
export interface ChainIngestStatus {
  chain: ChainName;
  /** An RPC URL is set for the chain in this command's environment. */
  configuredHere: boolean;
  leader: IngestLeader | null;
  headBlock: string | null;
  processedBlock: string | null;
  finalizedBlock: string | null;
  /** head - processed: blocks (slots on solana) the checkpoint trails the head by. */
  behindBlocks: string | null;
  /** Seconds since the leader last saw a new head (chain_heads.head_seen_at). */
  headSeenSecondsAgo: number | null;
  /** Solana: the watched token accounts and the oldest cursor slot among them. */
  solana?: { tokenAccounts: number; oldestCursorSlot: string | null };
}

/** The session holding each chain's ingest advisory lock in this database, by chain. */
async function ingestLeaders(sql: Sql): Promise<Map<ChainName, IngestLeader>> {
  const chains = loadChains();
  const byKey = new Map<string, ChainName>();
  for (const name of CHAIN_NAMES) {
    const chain = chains[name];
    if (chain?.kind === 'evm') byKey.set(`${INGEST_LOCK_CLASS}:${chain.chainId}`, name);
  }
  byKey.set(`${SOLANA_LOCK_KEY[0]}:${SOLANA_LOCK_KEY[1]}`, 'solana');
  const { rows } = await sql.query<{ classid: string; objid: string; pid: number; client_addr: string | null; application_name: string; backend_start: Date }>(
    `SELECT l.classid::bigint::text AS classid, l.objid::bigint::text AS objid, a.pid, host(a.client_addr) AS client_addr, a.application_name, a.backend_start
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid::bigint IN ($1, $2)`,
    [INGEST_LOCK_CLASS, SOLANA_LOCK_KEY[0]],
  );
  const leaders = new Map<ChainName, IngestLeader>();
  for (const row of rows) {
    const chain = byKey.get(`${row.classid}:${row.objid}`);
    if (chain) leaders.set(chain, { pid: row.pid, clientAddress: row.client_addr, applicationName: row.application_name, connectedAt: row.backend_start });
  }
  return leaders;
}

/** Every chain that has a leader, a checkpoint or an RPC URL here, with its leader and lag. */
export async function ingestStatus(sql: Sql, configured: ChainName[]): Promise<ChainIngestStatus[]> {
  const leaders = await ingestLeaders(sql);
  const { rows: heads } = await sql.query<{
    chain: ChainName;
    head_block: bigint | null;
    processed_block: bigint | null;
    finalized_block: bigint | null;
    seen: number | null;
  }>(
    `SELECT chain, head_block, processed_block, finalized_block, extract(epoch FROM now() - head_seen_at)::float8 AS seen
       FROM chain_heads WHERE livemode`,
  );
  const { rows: accounts } = await sql.query<{ n: number; oldest: bigint | null }>(
    'SELECT count(*)::int AS n, min(cursor_slot) AS oldest FROM solana_token_accounts',
  );
  const text = (value: bigint | null | undefined) => (value === null || value === undefined ? null : value.toString());
  return CHAIN_NAMES.filter((chain) => configured.includes(chain) || leaders.has(chain) || heads.some((row) => row.chain === chain)).map((chain) => {
    const head = heads.find((row) => row.chain === chain);
    const behind = head?.head_block != null && head.processed_block != null ? head.head_block - head.processed_block : null;
    return {
      chain,
      configuredHere: configured.includes(chain),
      leader: leaders.get(chain) ?? null,
      headBlock: text(head?.head_block),
      processedBlock: text(head?.processed_block),
      finalizedBlock: text(head?.finalized_block),
      behindBlocks: behind === null ? null : (behind < 0n ? 0n : behind).toString(),
      headSeenSecondsAgo: head?.seen == null ? null : Math.round(head.seen),
      ...(chain === 'solana' ? { solana: { tokenAccounts: accounts[0]?.n ?? 0, oldestCursorSlot: text(accounts[0]?.oldest) } } : {}),
    };
  });
}

/** What a rescan changed. */
export type RescanResult =
  | {
      chain: ChainName;
      kind: 'evm';
      changed: boolean;
      fromBlock: string;
      previousProcessedBlock: string | null;
      processedBlock: string | null;
      checkedBlock: { number: string; hash: string } | null;
      note: string;
    }
  | { chain: 'solana'; kind: 'solana'; changed: boolean; fromSlot: string; tokenAccounts: number; note: string };

/**
 * Moves a chain's ingest back so its next leader reads the chain again from `from` (a block; a
 * slot on solana). It only moves checkpoints: the ingester does the reading, with its usual
 * ranges, checks and metrics, and stores what it finds with its usual upserts, unique on
 * (chain, tx hash, log index), so a transfer already stored is not stored twice (re-ingesting is
 * a no-op) and one that is missing (restored from an older backup, a wallet's history, a
 * provider that served incomplete logs) is added.
 *
 * It runs only while no process leads the chain: it takes the chain's ingest lock itself for the
 * change, so no leader can move the checkpoint in between (a leader keeps its checkpoint in memory
 * and would write it back). Stop the ingest role first; the standbys take the lock back after.
 *
 * EVM: `chain_heads.processed_block` becomes `from - 1`. The stored unfinalized blocks stay for the
 * ingester's reorg checks, but re-reading a block rewrites its stored hash, so a reorg of
 * [from, processed] that happened while nothing ingested would go unseen: the newest stored block
 * is first compared with the node's (one call; equal hashes mean every block below it is
 * unchanged), and a difference refuses the rescan until the ingester has handled the reorg.
 *
 * Solana: every watched token account whose cursor is at or above `from` gets as cursor its newest
 * finalized signature below `from` (none: its history is listed again down to its floor), and
 * the floor goes down to `from`. Stored signatures are skipped on the way (not fetched again).
 */
export async function rescan(store: Store, config: Config, chain: ChainName, from: bigint): Promise<RescanResult> {
  const key: [number, number] = chain === 'solana' ? (SOLANA_LOCK_KEY as [number, number]) : [INGEST_LOCK_CLASS, loadChains()[chain]!.chainId as number];
  const client = await store.pool.connect();
  let locked = false;
  try {
    locked = (await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', key)).rows[0]!.ok;
    if (!locked) {
      const leader = (await ingestLeaders(client)).get(chain);
      const who = leader
        ? `process at ${leader.clientAddress ?? 'a local socket'} (database session ${leader.pid}, connected ${leader.connectedAt.toISOString()})`
        : 'another process';
      throw new NonRetryableError(
        `${chain} is being ingested by a ${who}: stop the ingest role first (docker compose stop ingest; kubectl scale deployment/svc-gateway-ingest --replicas=0), run the rescan, then start it again`,
      );
    }
    return chain === 'solana' ? await rescanSolana(client, from) : await rescanEvm(client, config, chain, from);
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock($1, $2)', key).catch(() => {});
    client.release();
  }
}

async function rescanEvm(client: pg.PoolClient, config: Config, chain: ChainName, from: bigint): Promise<RescanResult> {
  const base = { chain, kind: 'evm' as const, fromBlock: from.toString() };
  const { rows } = await client.query<{ processed_block: bigint | null }>('SELECT processed_block FROM chain_heads WHERE livemode AND chain = $1', [chain]);
  const processed = rows[0]?.processed_block ?? null;
  if (processed === null) {
    return {
      ...base,
      changed: false,
      previousProcessedBlock: null,
      processedBlock: null,
      checkedBlock: null,
      note: `${chain} was never ingested: its first start reads from below the head (logs.backfillBlocks)`,
    };
  }
  if (processed < from) {
    return {
      ...base,
      changed: false,
      previousProcessedBlock: processed.toString(),
      processedBlock: processed.toString(),
      checkedBlock: null,
      note: `nothing to do: the checkpoint (${processed}) is already below block ${from}`,
    };
  }
  const { rows: top } = await client.query<{ number: bigint; hash: string }>(
    'SELECT number, hash FROM chain_blocks WHERE livemode AND chain = $1 ORDER BY number DESC LIMIT 1',
    [chain],
  );
  let checkedBlock: { number: string; hash: string } | null = null;
  if (top[0]) {
    const nodeHash = await blockHash(config, chain, top[0].number);
    if (nodeHash !== top[0].hash.toLowerCase()) {
      throw new NonRetryableError(
        `${chain}: the node's block ${top[0].number} is ${nodeHash ?? 'missing'}, the stored one ${top[0].hash}: the chain reorganised since it was ingested. ` +
          'Start the ingest role and let it handle the reorg (it logs it), then run the rescan again',
      );
    }
    checkedBlock = { number: top[0].number.toString(), hash: top[0].hash };
  }
  await client.query('UPDATE chain_heads SET processed_block = $2, updated_at = now() WHERE livemode AND chain = $1', [chain, (from - 1n).toString()]);
  return {
    ...base,
    changed: true,
    previousProcessedBlock: processed.toString(),
    processedBlock: (from - 1n).toString(),
    checkedBlock,
    note: `the next ${chain} leader reads blocks ${from} to ${processed} again (${processed - from + 1n} blocks), then goes on to the head`,
  };
}

/** The node's hash of block `number`, from the first of the chain's HTTP RPC URLs that answers. */
async function blockHash(config: Config, chain: ChainName, number: bigint): Promise<string | null> {
  const urls = config.rpc[chain].http;
  if (urls.length === 0) {
    throw new NonRetryableError(
      `${chain}: set SVC_${chain.toUpperCase()}_RPC_URL for this command, so the stored blocks can be checked against the chain before the rescan`,
    );
  }
  const failures: string[] = [];
  for (const [index, url] of urls.entries()) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [`0x${number.toString(16)}`, false] }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await response.json()) as { result?: { hash?: string } | null; error?: { message?: string } };
      if (body.error) throw new Error(body.error.message ?? 'JSON-RPC error');
      return body.result?.hash?.toLowerCase() ?? null;
    } catch (error) {
      // URLs carry provider keys in their paths: name them by index and host only.
      failures.push(`${index}:${new URL(url).host}: ${(error as Error).message}`);
    }
  }
  throw new NonRetryableError(`${chain}: no RPC URL answered eth_getBlockByNumber (${failures.join('; ')})`);
}

async function rescanSolana(client: pg.PoolClient, from: bigint): Promise<RescanResult> {
  const { rowCount } = await client.query(
    `UPDATE solana_token_accounts a
        SET cursor_signature = previous.signature, cursor_slot = previous.slot, floor_slot = LEAST(a.floor_slot, $1::bigint), updated_at = now()
       FROM solana_token_accounts b
       LEFT JOIN LATERAL (
         SELECT s.signature, s.slot FROM solana_signatures s
          WHERE s.token_account = b.address AND s.commitment = 'finalized' AND s.slot < $1::bigint
          ORDER BY s.slot DESC, s.signature DESC LIMIT 1
       ) previous ON true
      WHERE a.address = b.address AND (a.cursor_slot >= $1::bigint OR a.floor_slot > $1::bigint)`,
    [from.toString()],
  );
  const accounts = rowCount ?? 0;
  return {
    chain: 'solana',
    kind: 'solana',
    changed: accounts > 0,
    fromSlot: from.toString(),
    tokenAccounts: accounts,
    note:
      accounts > 0
        ? `the next solana leader lists the signatures of ${accounts} token accounts again from slot ${from}; stored ones are skipped, missing ones fetched`
        : `nothing to do: no token account's cursor is at or above slot ${from}`,
  };
}
