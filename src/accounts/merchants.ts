import type { Sql } from '../store/index.ts';
import { newId, randomBase62, type SecretBox } from '../internal/crypto.ts';

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

/** A webhook signing secret, `whsec_` and 32 base62 characters (190 bits), shown once. */
export function newWebhookSecret(): string {
  return `whsec_${randomBase62(32)}`;
}

/**
 * Creates a merchant with its default webhook signing secret, which signs deliveries to
 * per-session `webhookUrl`s. The secret is returned here once and stored sealed.
 */
export async function createMerchant(sql: Sql, box: SecretBox, params: { name: string }): Promise<{ merchant: Merchant; webhookSecret: string }> {
  const webhookSecret = newWebhookSecret();
  const { rows } = await sql.query<MerchantRow>(
    'INSERT INTO merchants (id, name, webhook_secret_sealed) VALUES ($1, $2, $3) RETURNING id, name, created_at',
    [newId('mer'), params.name, box.seal(webhookSecret)],
  );
  return { merchant: toMerchant(rows[0]!), webhookSecret };
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

/** The merchant's default webhook signing secret, unsealed for signing. */
export async function merchantWebhookSecret(sql: Sql, box: SecretBox, merchantId: string): Promise<string | undefined> {
  const { rows } = await sql.query<{ webhook_secret_sealed: string }>('SELECT webhook_secret_sealed FROM merchants WHERE id = $1', [merchantId]);
  return rows[0] && box.open(rows[0].webhook_secret_sealed);
}
