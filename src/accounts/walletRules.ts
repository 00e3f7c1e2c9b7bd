import { prepared, type Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { conflict, forbidden, notFound } from '../internal/errors.ts';
import type { Role } from './dashboardUsers.ts';
import { roleCan } from './permissions.ts';
import { addWallet, getWallet, type Wallet } from './wallets.ts';

/**
 * How many unverified receiving wallets one merchant may have the gateway watch. An inline
 * `merchantWallet` on a live session is added (unverified) so the ingesters see its payments;
 * without a bound one account could make every ingester filter by any number of addresses.
 * Verified wallets do not count: each took a signature by its owner (or the operator).
 */
export const MAX_UNVERIFIED_WALLETS = 100;

/**
 * Live sessions of the merchant that still wait for (or count) payments to `address` on `chain`:
 * their monitoring window is open. A wallet they pay must stay watched.
 */
async function openSessionsOn(sql: Sql, params: { merchantId: string; chain: ChainName; address: string }): Promise<{ n: number; until: Date | null }> {
  const { rows } = await sql.query<{ n: number; until: Date | null }>(
    `SELECT count(*)::int AS n, max(monitor_until) AS until FROM payment_sessions
      WHERE livemode AND chain = $1 AND pay_to = $2 AND merchant_id = $3 AND monitor_until > now()`,
    [params.chain, params.address, params.merchantId],
  );
  return rows[0]!;
}

/** Active live payment links of the merchant that name `address` as their wallet (each visit pays it). */
async function linksOn(sql: Sql, params: { merchantId: string; chain: ChainName; address: string }): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `SELECT id FROM payment_links WHERE merchant_id = $1 AND livemode AND active AND chain = $2 AND merchant_wallet = $3 ORDER BY created_at, id LIMIT 3`,
    [params.merchantId, params.chain, params.address],
  );
  return rows.map((row) => row.id);
}

/**
 * Removes a receiving wallet. Refused (409, nothing changes) while a live session still watched
 * for payment pays it, or an active live payment link names it: sessions store the address they
 * were created with, and removing the wallet would stop the ingesters from seeing those payments.
 * Removing the default wallet leaves the chain without a default; no other wallet takes its place.
 * Run it in a transaction (the row lock keeps a session from starting to use the wallet meanwhile).
 * @throws {NotFoundError} unknown wallet; {ConflictError} wallet in use.
 */
export async function removeWallet(sql: Sql, params: { merchantId: string; walletId: string }): Promise<Wallet> {
  // FOR UPDATE waits for session creations holding the row (FOR KEY SHARE); the checks below then see their sessions.
  const wallet = await getWallet(sql, { ...params, forUpdate: true });
  if (!wallet) throw notFound(`wallet ${params.walletId} not found`);
  const where = { merchantId: params.merchantId, chain: wallet.chain, address: wallet.address };
  const open = await openSessionsOn(sql, where);
  if (open.n > 0) {
    throw conflict(
      `wallet ${wallet.id} (${wallet.chain}:${wallet.address}) is the receiving wallet of ${open.n} live session(s) still watched for payment (until ${open.until!.toISOString()}); removing it would hide their payments. Remove it after then`,
    );
  }
  const links = await linksOn(sql, where);
  if (links.length > 0) {
    throw conflict(
      `wallet ${wallet.id} (${wallet.chain}:${wallet.address}) is the wallet of active payment link(s) ${links.join(', ')}; deactivate them first (PATCH /payment-links/{id} with {"active": false})`,
    );
  }
  await sql.query('DELETE FROM wallets WHERE id = $1', [wallet.id]);
  return wallet;
}

/** Run at every live creation with an inline wallet: prepared. */
const KEEP_WALLET = prepared('SELECT 1 FROM wallets WHERE merchant_id = $1 AND chain = $2 AND address = $3 FOR KEY SHARE');

/**
 * Makes sure the ingesters watch `address`, a live session's inline `merchantWallet`: an existing
 * wallet row (verified or not) is kept from removal until the transaction ends; a new address is
 * added unverified, within {@link MAX_UNVERIFIED_WALLETS}. At the cap, the merchant's unverified
 * wallets that nothing uses any more (no live session in its monitoring window, no active live
 * link) are forgotten first; if the cap still holds, 409. Must run in the session's transaction.
 */
export async function registerInlineWallet(sql: Sql, params: { merchantId: string; chain: ChainName; address: string }): Promise<void> {
  // KEY SHARE: concurrent sessions on one wallet do not wait for each other, a removal waits for them.
  const { rowCount } = await sql.query(KEEP_WALLET, [params.merchantId, params.chain, params.address]);
  if (rowCount) return;
  // One new unverified wallet of a merchant at a time, so two sessions cannot both take the last place.
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`inline-wallets:${params.merchantId}`]);
  if ((await countUnverified(sql, params.merchantId)) >= MAX_UNVERIFIED_WALLETS) {
    await forgetUnusedUnverified(sql, params.merchantId);
    if ((await countUnverified(sql, params.merchantId)) >= MAX_UNVERIFIED_WALLETS) {
      throw conflict(
        `this merchant already has ${MAX_UNVERIFIED_WALLETS} unverified receiving wallets in use by open live sessions or active payment links, the most the gateway watches for one merchant; ` +
          'verify the wallets you receive on (POST /wallets/challenges with a live key; verified wallets do not count), reuse one of them, or wait until their sessions end',
      );
    }
  }
  await addWallet(sql, params);
}

async function countUnverified(sql: Sql, merchantId: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM wallets WHERE merchant_id = $1 AND verified_at IS NULL', [merchantId]);
  return rows[0]!.n;
}

/**
 * Deletes the merchant's unverified wallets that no live session in its monitoring window and no
 * active live link uses. Rows a concurrent session creation holds are skipped (SKIP LOCKED); the
 * usage check runs after the locks are taken, so it sees every session committed before them.
 */
async function forgetUnusedUnverified(sql: Sql, merchantId: string): Promise<void> {
  const { rows } = await sql.query<{ id: string }>('SELECT id FROM wallets WHERE merchant_id = $1 AND verified_at IS NULL FOR UPDATE SKIP LOCKED', [
    merchantId,
  ]);
  if (rows.length === 0) return;
  await sql.query(
    `DELETE FROM wallets w WHERE w.id = ANY($1::text[]) AND w.verified_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM payment_sessions s WHERE s.livemode AND s.chain = w.chain AND s.pay_to = w.address AND s.merchant_id = w.merchant_id AND s.monitor_until > now())
        AND NOT EXISTS (SELECT 1 FROM payment_links l WHERE l.merchant_id = w.merchant_id AND l.livemode AND l.active AND l.chain = w.chain AND l.merchant_wallet = w.address)`,
    [rows.map((row) => row.id)],
  );
}

/**
 * The dashboard's rule for live money a person routes (issue 24): a live payment link (or
 * session) created in the dashboard names only a verified receiving wallet of the merchant on its
 * chain, or none (the chain's default, verified by construction), unless the user's role has
 * `wallets.manage` (owners, who may add any wallet anyway). Test mode moves no money, so any
 * address passes there. `address` is the canonical form the link stores; run it in the
 * transaction that creates the link, so a refusal writes nothing.
 * @throws {ForbiddenError} a developer naming an address that is not a verified wallet.
 */
export async function checkDashboardWalletChoice(
  sql: Sql,
  params: { role: Role; livemode: boolean; merchantId: string; chain: ChainName; address: string | null; what?: string },
): Promise<void> {
  if (!params.livemode || params.address === null || roleCan(params.role, 'wallets.manage')) return;
  const { rowCount } = await sql.query('SELECT 1 FROM wallets WHERE merchant_id = $1 AND chain = $2 AND address = $3 AND verified_at IS NOT NULL', [
    params.merchantId,
    params.chain,
    params.address,
  ]);
  if (rowCount) return;
  throw forbidden(
    `a live ${params.what ?? 'payment link'} may name only a verified receiving wallet of this merchant on ${params.chain} (${params.address} is not one); ` +
      "leave the wallet empty for the chain's default, or ask an owner to add and verify the wallet under Settings",
  );
}
