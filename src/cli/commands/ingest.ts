import { CHAIN_NAMES, liveChains, type ChainName } from '../../internal/config.ts';
import { ingestStatus as readIngestStatus, rescan, type ChainIngestStatus } from '../../ingest/operator.ts';
import { emit, jsonOption, requireString, UsageError, withStore, type Command } from '../command.ts';

/** Two lines per chain: its leader, then its checkpoint against the head. */
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
export const ingestStatus: Command = {
  summary: 'show which process leads each chain’s ingest (advisory locks) and how far its checkpoint trails the head',
  usage: 'svc ingest status [--json]',
  options: { ...jsonOption },
  async run({ io, json }) {
    return withStore(io, async (store, { config }) => {
      const chains = await readIngestStatus(store, liveChains(config));
      emit(
        io,
        json,
        chains,
        chains.length === 0 ? 'No chain is ingested: no RPC URL is set here and the database has no checkpoint' : chains.map(describe).join('\n'),
      );
      return 0;
    });
  },
};

/** `svc ingest rescan --chain C --from-block N`: see `rescan` in ingest/operator.ts. */
export const ingestRescan: Command = {
  summary: 'read a chain again from a block (a slot on solana), e.g. after restoring a backup; run with the ingest role stopped',
  usage: 'svc ingest rescan --chain CHAIN --from-block N [--json]',
  options: {
    chain: { type: 'string', description: `the chain (${CHAIN_NAMES.join(', ')})` },
    'from-block': { type: 'string', description: 'first block (solana: slot) to read again; its transfers already stored stay as they are' },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const chain = requireString(values, 'chain') as ChainName;
    if (!CHAIN_NAMES.includes(chain)) throw new UsageError(`--chain must be one of ${CHAIN_NAMES.join(', ')}`);
    const fromText = requireString(values, 'from-block');
    if (!/^\d{1,19}$/.test(fromText)) throw new UsageError('--from-block must be a whole block (or slot) number');
    return withStore(io, async (store, { config }) => {
      const result = await rescan(store, config, chain, BigInt(fromText));
      emit(io, json, result, `${chain}: ${result.changed ? 'rescan scheduled' : 'no change'}: ${result.note}`);
      return 0;
    });
  },
};
