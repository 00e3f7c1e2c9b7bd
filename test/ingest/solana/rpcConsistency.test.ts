import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateKeyPairSigner, type Address, type KeyPairSigner } from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { createLogger } from '../../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../../src/internal/metrics.ts';
import { createIngestMetrics } from '../../../src/ingest/metrics.ts';
import { createSolanaRpcPool, type SolanaRpcPool } from '../../../src/ingest/solana/rpc.ts';
import { syncTokenAccount } from '../../../src/ingest/solana/syncTokenAccount.ts';
import { discoverTokenAccounts, loadTokenAccounts, saveTokenAccounts } from '../../../src/ingest/solana/accounts.ts';
import { transfersOf } from '../../helpers/solanaIngest.ts';

// RPC pools whose answers come from nodes at different roots (a load balancer, a failover): the
// node that answers getSlot(finalized) may be ahead of the one that lists signatures.
const db = useTestDatabase('solana_rpc_consistency');
let rpc: SolanaTestRpc;
let payer: KeyPairSigner;
const logger = createLogger({ level: 'silent' });
const MINTS = () => new Set<string>([rpc.mints.USDC, rpc.mints.USDT]);
const PROGRAMS = new Set<string>([TOKEN_PROGRAM_ADDRESS]);

function pool(): SolanaRpcPool {
  return createSolanaRpcPool({ urls: [rpc.url], logger, metrics: createIngestMetrics(createMetricsRegistry({ defaultMetrics: false })) });
}

async function watchOnly(owner: string) {
  const found = await discoverTokenAccounts(pool(), owner, [{ mint: rpc.mints.USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS }]);
  await saveTokenAccounts(db.store, found, 0n);
  const ata = await rpc.ata(owner as Address, 'USDC');
  return (await loadTokenAccounts(db.store)).find((a) => a.address === ata)!;
}
const reload = async (address: string) => (await loadTokenAccounts(db.store)).find((a) => a.address === address)!;

beforeAll(async () => {
  rpc = await startSolanaRpc();
  payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10_000_000_000n);
  rpc.ledger.finalize();
});

afterAll(async () => {
  await rpc?.stop();
});

describe('solana ingest, RPC nodes at different roots', () => {
  test('a stored payment listed as confirmed by a node one slot behind the finalized slot is undecided: not removed, and holds finality below it', async () => {
    const owner = (await generateKeyPairSigner()).address;
    let account = await watchOnly(owner);
    const paid = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 5_000_000n });
    const common = { store: db.store, rpc: pool(), mints: MINTS(), tokenPrograms: PROGRAMS, pageSize: 1000 };
    await syncTokenAccount({ ...common, account, finalizedSlot: rpc.ledger.finalizedSlot });
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('observed');
    // getSlot(finalized) came from a node that rooted paid.slot; the listing node has not yet.
    account = await reload(account.address);
    const undecidedSince = new Map<string, number>();
    const result = await syncTokenAccount({ ...common, account, finalizedSlot: paid.slot, undecidedSince });
    expect(result.removed).toBe(0);
    expect(result.undecidedSlot).toBe(paid.slot);
    expect(undecidedSince.has(paid.signature)).toBe(true);
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('observed');
    // The listing node catches up: finalized, decided, nothing held.
    rpc.ledger.finalize();
    const settled = await syncTokenAccount({ ...common, account: await reload(account.address), finalizedSlot: rpc.ledger.finalizedSlot, undecidedSince });
    expect(settled).toMatchObject({ removed: 0, undecidedSlot: null });
    expect(undecidedSince.size).toBe(0);
    const { rows } = await db.store.query('SELECT commitment FROM solana_signatures WHERE signature = $1', [paid.signature]);
    expect(rows).toEqual([{ commitment: 'finalized' }]);
  });

  test('paging across two backends: an older payment listed as confirmed by a lagging backend holds the cursor back and is stored on the next pass', async () => {
    const owner = (await generateKeyPairSigner()).address;
    const account = await watchOnly(owner);
    const x = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 1_000_001n });
    const y = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 1_000_002n });
    rpc.ledger.finalize();
    const realRoot = rpc.ledger.finalizedSlot;
    const inner = pool();
    let listings = 0;
    // The second page is served by a backend whose root is just below x.slot.
    const lagging: SolanaRpcPool = {
      endpoints: inner.endpoints,
      batch: (method, paramsList) => inner.batch(method, paramsList),
      async call(method, request) {
        if (method !== 'getSignaturesForAddress') return inner.call(method, request);
        listings += 1;
        if (listings === 2) rpc.ledger.finalizedSlot = x.slot - 1n;
        try {
          return await inner.call(method, request);
        } finally {
          rpc.ledger.finalizedSlot = realRoot;
        }
      },
    };
    await syncTokenAccount({ store: db.store, rpc: lagging, account, finalizedSlot: realRoot, mints: MINTS(), tokenPrograms: PROGRAMS, pageSize: 1 });
    const after = await reload(account.address);
    expect(after.cursorSignature).toBeNull();
    await syncTokenAccount({ store: db.store, rpc: inner, account: after, finalizedSlot: realRoot, mints: MINTS(), tokenPrograms: PROGRAMS, pageSize: 1000 });
    expect(await transfersOf(db.store, y.signature)).toHaveLength(1);
    expect(await transfersOf(db.store, x.signature)).toHaveLength(1);
    expect((await reload(account.address)).cursorSignature).toBe(y.signature);
  });

  test('a stored signature no longer listed by a lagging node but known to getSignatureStatuses is kept; once unknown too it is removed', async () => {
    const owner = (await generateKeyPairSigner()).address;
    const account = await watchOnly(owner);
    const paid = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 2_500_000n });
    const inner = pool();
    const common = { store: db.store, mints: MINTS(), tokenPrograms: PROGRAMS, pageSize: 1000 };
    await syncTokenAccount({ ...common, rpc: inner, account, finalizedSlot: rpc.ledger.finalizedSlot });
    // A listing node that has not indexed paid.slot yet, while getSlot(finalized) is past it.
    const blind: SolanaRpcPool = {
      endpoints: inner.endpoints,
      batch: (method, paramsList) => inner.batch(method, paramsList),
      call: (method, request) => (method === 'getSignaturesForAddress' ? Promise.resolve([] as never) : inner.call(method, request)),
    };
    const kept = await syncTokenAccount({ ...common, rpc: blind, account: await reload(account.address), finalizedSlot: paid.slot });
    expect(kept).toMatchObject({ removed: 0, undecidedSlot: paid.slot });
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('observed');
    // Really gone (its fork abandoned): not listed, and getSignatureStatuses does not know it.
    rpc.ledger.drop(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    const gone = await syncTokenAccount({ ...common, rpc: inner, account: await reload(account.address), finalizedSlot: rpc.ledger.finalizedSlot });
    expect(gone).toMatchObject({ removed: 1, undecidedSlot: null });
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('removed');
  });

  test('a signature still listed as only confirmed long after its slot was finalized (an unrooted fork) is removed after the grace period, never before', async () => {
    const owner = (await generateKeyPairSigner()).address;
    const account = await watchOnly(owner);
    const paid = await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount: 3_500_000n });
    const common = { store: db.store, rpc: pool(), mints: MINTS(), tokenPrograms: PROGRAMS, pageSize: 1000, orphanGraceMs: 1_000 };
    await syncTokenAccount({ ...common, account, finalizedSlot: rpc.ledger.finalizedSlot });
    rpc.ledger.orphan(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    const undecidedSince = new Map<string, number>();
    let clock = 0;
    const now = () => clock;
    expect(
      await syncTokenAccount({ ...common, account: await reload(account.address), finalizedSlot: rpc.ledger.finalizedSlot, undecidedSince, now }),
    ).toMatchObject({ removed: 0, undecidedSlot: paid.slot });
    clock = 999;
    expect(
      await syncTokenAccount({ ...common, account: await reload(account.address), finalizedSlot: rpc.ledger.finalizedSlot, undecidedSince, now }),
    ).toMatchObject({ removed: 0 });
    clock = 1_000;
    expect(
      await syncTokenAccount({ ...common, account: await reload(account.address), finalizedSlot: rpc.ledger.finalizedSlot, undecidedSince, now }),
    ).toMatchObject({ removed: 1, undecidedSlot: null });
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('removed');
    // It never passes the cursor: it was never final.
    expect((await reload(account.address)).cursorSignature).toBeNull();
  });
});

describe('solana ingest, a provider that caps the page size', () => {
  test('pages shorter than asked do not end the listing: every signature between the cursor and the newest is read', async () => {
    const owner = (await generateKeyPairSigner()).address;
    const account = await watchOnly(owner);
    const paid = [];
    for (const amount of [1_100_001n, 1_100_002n, 1_100_003n]) paid.push(await rpc.pay({ from: payer, to: owner, currency: 'USDC', amount }));
    rpc.ledger.finalize();
    const inner = pool();
    // At most 2 signatures per page, whatever `limit` asks.
    const capped: SolanaRpcPool = {
      endpoints: inner.endpoints,
      batch: (method, paramsList) => inner.batch(method, paramsList),
      call: async (method, request) => {
        const answer = await inner.call(method, request);
        return method === 'getSignaturesForAddress' ? ((answer as unknown[]).slice(0, 2) as typeof answer) : answer;
      },
    };
    await syncTokenAccount({
      store: db.store,
      rpc: capped,
      account,
      finalizedSlot: rpc.ledger.finalizedSlot,
      mints: MINTS(),
      tokenPrograms: PROGRAMS,
      pageSize: 1000,
    });
    for (const { signature } of paid) expect(await transfersOf(db.store, signature)).toHaveLength(1);
    expect((await reload(account.address)).cursorSignature).toBe(paid[2]!.signature);
  });
});
