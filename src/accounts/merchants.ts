import type { Sql } from '../store/index.ts';
import { newId, type SecretBox } from '../internal/crypto.ts';
import { newWebhookSecret } from '../delivery/secrets.ts';

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

/** Re-exported: callers made webhook secrets from here before they moved to src/delivery. */
export { newWebhookSecret };

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
