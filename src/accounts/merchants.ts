import type { Sql } from '../store/index.ts';
import { newId, type SecretBox } from '../internal/crypto.ts';
import { newWebhookSecret } from '../internal/crypto.ts';
import { badRequest } from '../internal/errors.ts';

export interface Merchant {
  id: string;
  name: string;
  createdAt: Date;
}

interface MerchantRow {
  id: string;
  name: string;
  created_at: Date;
}

const toMerchant = (row: MerchantRow): Merchant => ({ id: row.id, name: row.name, createdAt: row.created_at });

/**
 * Creates a merchant with its two webhook signing secrets for per-session `webhookUrl`
 * deliveries: one signs live events, the other sandbox events, so a sandbox delivery never
 * verifies at a live receiver. Both are returned here once and stored sealed.
 */
export async function createMerchant(
  sql: Sql,
  box: SecretBox,
  params: { name: string },
): Promise<{ merchant: Merchant; webhookSecrets: { live: string; sandbox: string } }> {
  const webhookSecrets = { live: newWebhookSecret(), sandbox: newWebhookSecret() };
  // One statement, so a merchant never exists without its secrets even outside a transaction.
  const { rows } = await sql.query<MerchantRow>(
    `WITH m AS (INSERT INTO merchants (id, name) VALUES ($1, $2) RETURNING id, name, created_at),
          s AS (INSERT INTO merchant_webhook_secrets (merchant_id, livemode, secret_sealed)
                SELECT m.id, t.livemode, t.sealed FROM m, unnest($3::boolean[], $4::text[]) AS t(livemode, sealed))
     SELECT * FROM m`,
    [newId('mer'), params.name, [true, false], [box.seal(webhookSecrets.live), box.seal(webhookSecrets.sandbox)]],
  );
  return { merchant: toMerchant(rows[0]!), webhookSecrets };
}

export async function getMerchant(sql: Sql, id: string): Promise<Merchant | undefined> {
  const { rows } = await sql.query<MerchantRow>('SELECT id, name, created_at FROM merchants WHERE id = $1', [id]);
  return rows[0] && toMerchant(rows[0]);
}

export async function listMerchants(sql: Sql): Promise<Merchant[]> {
  const { rows } = await sql.query<MerchantRow>('SELECT id, name, created_at FROM merchants ORDER BY created_at, id');
  return rows.map(toMerchant);
}

export async function countMerchants(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ count: bigint }>('SELECT count(*) AS count FROM merchants');
  return Number(rows[0]!.count);
}

/** A merchant's operator-set payment settings and per-key rate limits (`null`: the default). */
export interface MerchantSettings {
  id: string;
  acceptBridgedTokens: boolean;
  paymentToleranceBps: number;
  /** The attribution mode of sessions and links that do not name one (`amount` on solana whatever this says). */
  defaultAttribution: 'amount' | 'address';
  createPerMinute: number | null;
  readPerMinute: number | null;
  writePerMinute: number | null;
}

/** The largest payment tolerance: 10% of the due amount (the column's check allows no more). */
export const MAX_PAYMENT_TOLERANCE_BPS = 1000;

/**
 * Sets a merchant's payment settings (the operator's `svc merchants update`, and an owner on the
 * dashboard's Settings page): whether bridged tokens (USDC.e, …) count where a chain lists them,
 * and the payment tolerance in basis points of the due amount (a whole number from 0 to
 * {@link MAX_PAYMENT_TOLERANCE_BPS}; 400 otherwise), and the default attribution mode of new
 * sessions (`amount` or `address`, issue 25: `address` gives each EVM session its own deposit
 * address; solana keeps references). An omitted field keeps its value. New
 * sessions and matching use them at once; sessions already paid keep their state.
 */
export async function setMerchantPaymentSettings(
  sql: Sql,
  merchantId: string,
  settings: { acceptBridgedTokens?: boolean; paymentToleranceBps?: number; defaultAttribution?: string },
): Promise<void> {
  const attribution = settings.defaultAttribution;
  if (attribution !== undefined && attribution !== 'amount' && attribution !== 'address') {
    throw badRequest('default attribution must be "amount" (a unique amount per payment) or "address" (a deposit address per payment, EVM chains)');
  }
  const tolerance = settings.paymentToleranceBps;
  if (tolerance !== undefined && !(Number.isInteger(tolerance) && tolerance >= 0 && tolerance <= MAX_PAYMENT_TOLERANCE_BPS)) {
    throw badRequest(`payment tolerance must be a whole number of basis points from 0 to ${MAX_PAYMENT_TOLERANCE_BPS} (10%)`);
  }
  if (settings.acceptBridgedTokens !== undefined)
    await sql.query('UPDATE merchants SET accept_bridged_tokens = $2 WHERE id = $1', [merchantId, settings.acceptBridgedTokens]);
  if (settings.paymentToleranceBps !== undefined)
    await sql.query('UPDATE merchants SET payment_tolerance_bps = $2 WHERE id = $1', [merchantId, settings.paymentToleranceBps]);
  if (attribution !== undefined) await sql.query('UPDATE merchants SET default_attribution = $2 WHERE id = $1', [merchantId, attribution]);
}

/** A merchant's settings as `svc merchants update` prints them, or undefined when it does not exist. */
export async function getMerchantSettings(sql: Sql, merchantId: string): Promise<MerchantSettings | undefined> {
  const { rows } = await sql.query<MerchantSettings>(
    `SELECT m.id, m.accept_bridged_tokens AS "acceptBridgedTokens", m.payment_tolerance_bps AS "paymentToleranceBps",
            m.default_attribution AS "defaultAttribution",
            l.create_per_minute AS "createPerMinute", l.read_per_minute AS "readPerMinute", l.write_per_minute AS "writePerMinute"
       FROM merchants m LEFT JOIN merchant_rate_limits l ON l.merchant_id = m.id WHERE m.id = $1`,
    [merchantId],
  );
  return rows[0];
}
