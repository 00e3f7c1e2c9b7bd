import type { Store } from './store/index.ts';
import type { SecretBox } from './internal/crypto.ts';
import { countMerchants, createApiKey, createMerchant, recordAudit, type Actor } from './accounts/index.ts';

/** The audit log's actor of what the first start makes. */
const FIRST_START: Actor = { userId: null, label: 'svc start (first start)', ip: null };
import { BOOTSTRAP_LOCK_KEY } from './store/lockKeys.ts';

export interface BootstrapResult {
  merchantId: string;
  testKey: string;
  /**
   * The secret of the merchant's sandbox per-session webhookUrl deliveries, beside the test key.
   * The live secret is not shown: first-start output often ends up in logs, and a live secret
   * there could sign live payment events. Get it with a live key (POST /webhook-secret/rotate)
   * or `svc webhooks rotate-secret --mode live`.
   */
  sandboxWebhookSecret: string;
}

/**
 * On the very first start of an empty database, creates a merchant and a sandbox key, so a new
 * user can make a request at once. Returns them for printing once; afterwards returns undefined.
 */
export async function bootstrapFirstMerchant(store: Store, box: SecretBox): Promise<BootstrapResult | undefined> {
  return store.transaction(async (sql) => {
    await sql.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK_KEY]);
    if ((await countMerchants(sql)) > 0) return undefined;
    const { merchant, webhookSecrets } = await createMerchant(sql, box, { name: 'Default merchant' });
    const { apiKey, secret } = await createApiKey(sql, { merchantId: merchant.id, livemode: false, description: 'created on first start' });
    await recordAudit(sql, { merchantId: merchant.id, actor: FIRST_START, action: 'merchant.created', target: merchant.id, details: { name: merchant.name } });
    await recordAudit(sql, {
      merchantId: merchant.id,
      actor: FIRST_START,
      action: 'key.created',
      target: apiKey.id,
      livemode: false,
      details: { hint: apiKey.hint, scopes: apiKey.scopes },
    });
    return { merchantId: merchant.id, testKey: secret, sandboxWebhookSecret: webhookSecrets.sandbox };
  });
}
