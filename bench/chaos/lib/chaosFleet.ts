/**
 * The setting of the payment chaos runs (failover.ts, scale.ts, reorgs.ts), started and ended in
 * one place: anvil as polygon with its real USDC, a webhook receiver, the fleet's role processes
 * (lib/fleet.ts) on the run's database, the bootstrap merchant's live key with the receiver
 * registered, and the payer. Its end: settle (blocks past confirmation and finality, every
 * payment confirmed, every event delivered) and the ledger audit, then everything stopped, the
 * role logs kept when the run failed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Address } from 'viem';
import { loadChains } from '../../../src/internal/chains.ts';
import { type Anvil, startAnvil } from '../../../test/helpers/anvil.ts';
import { type Fleet, startFleet } from './fleet.ts';
import { auditLedger, reportAudit } from './ledgerAudit.ts';
import { settle } from './settle.ts';
import { type HookReceiver, liveMerchant, type PaymentRecord, startHookReceiver, startPayer } from './traffic.ts';

/** Something the run puts between the ingesters and anvil (a flaky RPC): its URL and its end. */
export interface RpcFront {
  url: string;
  close(): Promise<void>;
}

export interface ChaosFleet<R extends RpcFront | undefined> {
  anvil: Anvil;
  /** polygon's USDC on anvil. */
  usdc: Address;
  receiver: HookReceiver;
  /** What `rpc` made (undefined without it). */
  rpc: R;
  fleet: Fleet;
  /** The bootstrap merchant's live key. */
  key: string;
  payer: Awaited<ReturnType<typeof startPayer>>;
  logDir: string;
  /**
   * Settles the run (lib/settle.ts) and audits it (lib/ledgerAudit.ts) against `databaseUrl`
   * (default the fleet's), printing both. @returns the failing kinds (those in `allowed` are
   * reported as RPO, not failed) and the settle figures.
   */
  settleAndAudit(params: {
    records: PaymentRecord[];
    timeoutMs: number;
    databaseUrl?: string;
    allowed?: string[];
  }): Promise<{ failing: string[]; settled: Awaited<ReturnType<typeof settle>> }>;
  /** Stops the fleet, the receiver, the RPC front and anvil; keeps the role logs if `failing` (or CHAOS_KEEP_LOGS). */
  stop(failing: string[]): Promise<void>;
}

/**
 * Starts the setting of a payment chaos run; if any part fails to start, stops the parts that
 * did (no anvil or role process is left behind). `names` are the fleet's roles (lib/fleet.ts),
 * `wallet` the merchant's receiving address, `label` the role logs' folder prefix.
 */
export async function startChaosFleet<R extends RpcFront | undefined = undefined>(params: {
  label: string;
  databaseUrl: string;
  wallet: Address;
  names: string[];
  /** Puts something between the ingesters and anvil's RPC URL. */
  rpc?: (anvilRpcUrl: string) => Promise<R & RpcFront>;
  /** Gives the ingesters anvil's WebSocket too (`SVC_POLYGON_WS_URL`): woken by each new head, not every 2 s. */
  newHeads?: boolean;
}): Promise<ChaosFleet<R>> {
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((error) => console.error(error));
  };
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-${params.label}-`));
  try {
    const anvil = await startAnvil({ chain: 'polygon' });
    stops.push(() => anvil.stop());
    await anvil.installChainTokens();
    const usdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
    const rpc = (params.rpc ? await params.rpc(anvil.rpcUrl) : undefined) as R;
    if (rpc) stops.push(() => rpc.close());
    const receiver = await startHookReceiver();
    stops.push(() => receiver.close());
    const fleet = await startFleet({
      databaseUrl: params.databaseUrl,
      rpcUrls: {
        SVC_POLYGON_RPC_URL: rpc?.url ?? anvil.rpcUrl,
        ...(params.newHeads ? { SVC_POLYGON_WS_URL: anvil.rpcUrl.replace(/^http/, 'ws') } : {}),
      },
      names: params.names,
      logDir,
    });
    stops.push(() => fleet.stop());
    const key = await liveMerchant(fleet, params.wallet, receiver.url);
    const payer = await startPayer(anvil, usdc);
    return {
      anvil,
      usdc,
      receiver,
      rpc,
      fleet,
      key,
      payer,
      logDir,
      async settleAndAudit({ records, timeoutMs, databaseUrl = params.databaseUrl, allowed }) {
        const settled = await settle({ databaseUrl, anvil, records, deliveries: receiver.deliveries, timeoutMs, token: usdc, wallet: params.wallet });
        if (settled.unmined > 0) console.log(`  ${settled.unmined} payment(s) anvil answered but never mined: their sessions stay unpaid, as they should`);
        const result = await auditLedger({ databaseUrl, anvil, token: usdc, wallet: params.wallet, records, deliveries: receiver.deliveries });
        const failing = reportAudit(result, allowed);
        if (settled.pendingSessions > 0) failing.push(`${settled.pendingSessions} paid sessions never confirmed`);
        return { failing, settled };
      },
      async stop(failing) {
        await stopAll();
        if (failing.length === 0 && !process.env.CHAOS_KEEP_LOGS) fs.rmSync(logDir, { recursive: true, force: true });
        else console.log(`role logs kept in ${logDir}`);
      },
    };
  } catch (error) {
    await stopAll();
    console.log(`role logs kept in ${logDir}`);
    throw error;
  }
}

/**
 * Runs the body of a chaos run on its started setting: an error fails the run with its message
 * (rather than escaping and leaving processes running); then the setting is stopped, and
 * `after` (the database's end). @returns what failed (`body` adds its own findings to it).
 */
export async function runGuarded(
  run: Pick<ChaosFleet<RpcFront | undefined>, 'stop'>,
  body: (failing: string[]) => Promise<void>,
  after?: () => Promise<void>,
): Promise<string[]> {
  const failing: string[] = [];
  try {
    await body(failing);
  } catch (error) {
    console.error(error);
    failing.push(`the run failed: ${(error as Error).message}`);
  } finally {
    await run.stop(failing);
    await after?.();
  }
  return failing;
}

/** Prints the run's total time and PASS or FAIL with what failed, and exits 0 or 1. */
export function finishRun(failing: string[], startedAt?: number): never {
  if (startedAt !== undefined) console.log(`total ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  console.log(failing.length === 0 ? 'PASS' : `FAIL: ${failing.join('; ')}`);
  process.exit(failing.length === 0 ? 0 : 1);
}
