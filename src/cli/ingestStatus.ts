import { CHAIN_NAMES, liveChains, type ChainName } from '../internal/config.ts';
import { loadChains } from '../internal/chains.ts';
import { EVM_INGEST_LOCK_CLASS as INGEST_LOCK_CLASS, SOLANA_INGEST_LOCK as SOLANA_LOCK_KEY } from '../store/lockKeys.ts';
import type { Sql } from '../store/index.ts';
import { jsonOption, type CliKit, type OperatorCommand } from './operatorKit.ts';

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
export async function ingestLeaders(sql: Sql): Promise<Map<ChainName, IngestLeader>> {
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
  const { rows: heads } = await sql.query<{ chain: ChainName; head_block: bigint | null; processed_block: bigint | null; finalized_block: bigint | null; seen: number | null }>(
    `SELECT chain, head_block, processed_block, finalized_block, extract(epoch FROM now() - head_seen_at)::float8 AS seen
       FROM chain_heads WHERE livemode`,
  );
  const { rows: accounts } = await sql.query<{ n: number; oldest: bigint | null }>('SELECT count(*)::int AS n, min(cursor_slot) AS oldest FROM solana_token_accounts');
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

function describe(status: ChainIngestStatus): string {
  const leader = status.leader
    ? `leader pid ${status.leader.pid} at ${status.leader.clientAddress ?? 'local socket'} (connected ${status.leader.connectedAt.toISOString()})`
    : 'NO LEADER';
  const lag =
    status.processedBlock === null
      ? 'never ingested'
      : `processed ${status.processedBlock} of head ${status.headBlock ?? '?'} (${status.behindBlocks ?? '?'} behind), head seen ${status.headSeenSecondsAgo ?? '?'} s ago, finalized ${status.finalizedBlock ?? '?'}`;
  const solana = status.solana ? `; ${status.solana.tokenAccounts} token accounts, oldest cursor slot ${status.solana.oldestCursorSlot ?? 'none'}` : '';
  return `${status.chain.padEnd(9)} ${leader}\n${' '.repeat(10)}${lag}${solana}${status.configuredHere ? '' : ' (no RPC URL in this environment)'}`;
}

/** `svc ingest status`: which process leads each chain's ingest, and how far behind the head it is. */
export function ingestStatusCommand(kit: CliKit): OperatorCommand {
  return {
    summary: 'show which process leads each chain’s ingest (advisory locks) and how far its checkpoint trails the head',
    usage: 'svc ingest status [--json]',
    options: { ...jsonOption },
    async run({ io, json }) {
      return kit.withStore(io, async (store, { config }) => {
        const chains = await ingestStatus(store, liveChains(config));
        kit.emit(io, json, chains, chains.length === 0 ? 'No chain is ingested: no RPC URL is set here and the database has no checkpoint' : chains.map(describe).join('\n'));
        return 0;
      });
    },
  };
}
