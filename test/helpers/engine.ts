import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createMerchant } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { canonicalAddress } from '../../src/internal/addresses.ts';
import { loadChains } from '../../src/internal/chains.ts';
import type { ChainName } from '../../src/internal/config.ts';
import { createSession } from '../../src/payments/sessions.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import type { Session } from '../../src/payments/session.ts';
import type { Store, Sql } from '../../src/store/index.ts';

const box = createSecretBox(randomBytes(32));

/** A fresh merchant; `toleranceBps` sets its payment tolerance. */
export async function newMerchant(sql: Sql, params: { toleranceBps?: number } = {}): Promise<string> {
  const { merchant } = await createMerchant(sql, box, { name: 'Engine Test Shop' });
  if (params.toleranceBps) await sql.query('UPDATE merchants SET payment_tolerance_bps = $2 WHERE id = $1', [merchant.id, params.toleranceBps]);
  return merchant.id;
}

/** A random EVM wallet address in canonical (EIP-55) form. */
export function newEvmWallet(chain: ChainName = 'polygon'): string {
  return canonicalAddress(chain, `0x${randomBytes(20).toString('hex')}`)!;
}

/** The default USDC token of an EVM chain (canonical address). */
export function usdc(chain: ChainName = 'polygon'): string {
  return loadChains()[chain].tokens.find((t) => t.currency === 'USDC' && t.acceptedByDefault)!.address;
}

/** A session created exactly as the API creates it (createSession, in a transaction). */
export async function newSession(
  store: Store,
  params: {
    merchantId: string;
    wallet: string;
    amount: string;
    chain?: ChainName;
    livemode?: boolean;
    expiresIn?: number;
    monitorWindowSeconds?: number;
    metadata?: Record<string, string>;
  },
): Promise<Session> {
  return store.transaction((sql) =>
    createSession(sql, {
      merchantId: params.merchantId,
      livemode: params.livemode ?? true,
      amount: params.amount,
      currency: 'USDC',
      chain: params.chain ?? 'polygon',
      merchantWallet: params.wallet,
      metadata: params.metadata ?? { order: 'A-1' },
      expiresIn: params.expiresIn,
      monitorWindowSeconds: params.monitorWindowSeconds ?? 86400,
    }),
  );
}

let txCounter = 0;

/**
 * Stores a transfer row exactly as the EVM ingester's commitRange does (livemode, chain, tx hash,
 * log index, block, token, from, to, amount), with a block time of now unless given.
 */
export async function insertTransfer(
  sql: Sql,
  params: {
    chain?: ChainName;
    livemode?: boolean;
    to: string;
    amount: bigint;
    block: bigint;
    token?: string;
    blockTime?: Date;
    referenceKeys?: string[];
    txHash?: string;
  },
): Promise<{ id: bigint; txHash: string }> {
  const chain = params.chain ?? 'polygon';
  const txHash = params.txHash ?? `0x${randomBytes(31).toString('hex')}${(txCounter++ % 256).toString(16).padStart(2, '0')}`;
  const { rows } = await sql.query<{ id: bigint }>(
    `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, from_address, to_address, amount, reference_keys)
     VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
    [
      params.livemode ?? true,
      chain,
      txHash,
      String(params.block),
      `0x${randomBytes(32).toString('hex')}`,
      params.blockTime ?? new Date(),
      params.token ?? usdc(chain),
      '0x000000000000000000000000000000000C0ffee1',
      params.to,
      String(params.amount),
      params.referenceKeys ?? [],
    ],
  );
  return { id: rows[0]!.id, txHash };
}

/** Sets the chain head as the ingester does (head, and finalized when given). */
export async function setHead(sql: Sql, params: { chain?: ChainName; livemode?: boolean; head: bigint; finalized?: bigint | null }): Promise<void> {
  await sql.query(
    `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, finalized_block, head_seen_at)
     VALUES ($1, $2, $3, $3, $4, now())
     ON CONFLICT (livemode, chain) DO UPDATE SET head_block = excluded.head_block, processed_block = excluded.processed_block,
       finalized_block = excluded.finalized_block, head_seen_at = now(), updated_at = now()`,
    [
      params.livemode ?? true,
      params.chain ?? 'polygon',
      String(params.head),
      params.finalized === undefined || params.finalized === null ? null : String(params.finalized),
    ],
  );
}

/** Marks every transfer above `block` removed, as the ingester does on a reorg. */
export async function removeAbove(sql: Sql, params: { chain?: ChainName; livemode?: boolean; block: bigint }): Promise<void> {
  await sql.query(
    `UPDATE transfers SET status = 'removed', removed_at = now() WHERE livemode = $1 AND chain = $2 AND block_number > $3 AND status = 'observed'`,
    [params.livemode ?? true, params.chain ?? 'polygon', String(params.block)],
  );
}

/** Moves a session's expiry (and monitoring window) into the past by `seconds` (the window stays open by default). */
export async function expireNow(sql: Sql, sessionId: string, params: { closeWindow?: boolean } = {}): Promise<void> {
  await sql.query(
    `UPDATE payment_sessions SET expires_at = now() - interval '1 second',
       monitor_until = CASE WHEN $2 THEN now() - interval '1 second' ELSE monitor_until END WHERE id = $1`,
    [sessionId, params.closeWindow ?? false],
  );
}

/** The event types written for a session, in order. */
export async function eventsOf(sql: Sql, sessionId: string): Promise<string[]> {
  const { rows } = await sql.query<{ type: string }>('SELECT type FROM events WHERE session_id = $1 ORDER BY seq', [sessionId]);
  return rows.map((row) => row.type);
}

export async function statusOf(
  sql: Sql,
  sessionId: string,
): Promise<{ status: string; amount_received: string; confirmations: number; tx_hash: string | null }> {
  const { rows } = await sql.query('SELECT status, amount_received::text, confirmations, tx_hash FROM payment_sessions WHERE id = $1', [sessionId]);
  return rows[0] as never;
}

/** A silent engine on `store`, with a metrics registry of its own. */
export function quietEngine(store: Store) {
  return createEngine({ store, logger: pino({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
}

/** A block number above every head stored so far on `chain`: each test of a file works on blocks of its own. */
export async function nextBlockBase(sql: Sql, chain: ChainName = 'polygon'): Promise<bigint> {
  const { rows } = await sql.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}
