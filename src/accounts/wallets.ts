import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { newId, randomBase62 } from '../internal/crypto.ts';
import { canonicalAddress, unreceivableReason } from '../internal/addresses.ts';
import { verifyWalletSignature } from '../internal/signatures.ts';
import { loadChains } from '../internal/chains.ts';
import { badRequest, conflict, notFound } from '../internal/errors.ts';

export type VerificationMethod = 'eip191' | 'ed25519' | 'operator';

export interface Wallet {
  id: string;
  merchantId: string;
  chain: ChainName;
  address: string;
  verified: boolean;
  verificationMethod: VerificationMethod | null;
  verifiedAt: Date | null;
  /** Paid by live sessions and links on this chain that name no `merchantWallet`; at most one per chain. */
  isDefault: boolean;
  createdAt: Date;
}

interface WalletRow {
  id: string;
  merchant_id: string;
  chain: ChainName;
  address: string;
  verification_method: VerificationMethod | null;
  verified_at: Date | null;
  is_default: boolean;
  created_at: Date;
}

const COLUMNS = 'id, merchant_id, chain, address, verification_method, verified_at, is_default, created_at';

const toWallet = (row: WalletRow): Wallet => ({
  id: row.id,
  merchantId: row.merchant_id,
  chain: row.chain,
  address: row.address,
  verified: row.verified_at !== null,
  verificationMethod: row.verification_method,
  verifiedAt: row.verified_at,
  isDefault: row.is_default,
  createdAt: row.created_at,
});

/** How long a wallet has to sign its challenge. Ten minutes covers a person finding their wallet app. */
const CHALLENGE_TTL_MS = 10 * 60_000;

/** A valid address of `chain` that can receive payments (not a burn address, program id, token contract or mint), canonical. */
function requireAddress(chain: ChainName, address: string): string {
  const canonical = canonicalAddress(chain, address);
  if (!canonical) throw badRequest(`address ${JSON.stringify(address)} is not a valid ${chain} address`);
  const reason = unreceivableReason(chain, canonical, loadChains()[chain].tokens);
  if (reason) throw badRequest(`address ${canonical} ${reason} on ${chain}: funds sent there cannot be spent, so it cannot be a receiving wallet`);
  return canonical;
}

/**
 * Adds a receiving wallet, or returns the existing one for the same (merchant, chain, address).
 * `verifiedBy: 'operator'` is for the CLI: whoever runs it controls the database anyway.
 * `makeDefault` then makes it its chain's default (see {@link setDefaultWallet}); adding a wallet
 * without it never changes which wallet is the default.
 */
export async function addWallet(
  sql: Sql,
  params: { merchantId: string; chain: ChainName; address: string; verifiedBy?: VerificationMethod; makeDefault?: boolean },
): Promise<Wallet> {
  const address = requireAddress(params.chain, params.address);
  const verifiedBy = params.verifiedBy ?? null;
  const { rows } = await sql.query<WalletRow>(
    `INSERT INTO wallets (id, merchant_id, chain, address, verification_method, verified_at)
     VALUES ($1, $2, $3, $4, $5::text, CASE WHEN $5::text IS NULL THEN NULL ELSE now() END)
     ON CONFLICT (merchant_id, chain, address) DO UPDATE
       SET verification_method = coalesce(wallets.verification_method, excluded.verification_method),
           verified_at = coalesce(wallets.verified_at, excluded.verified_at)
     RETURNING ${COLUMNS}`,
    [newId('wal'), params.merchantId, params.chain, address, verifiedBy],
  );
  const wallet = toWallet(rows[0]!);
  return params.makeDefault ? setDefaultWallet(sql, { merchantId: params.merchantId, walletId: wallet.id }) : wallet;
}

/** One wallet of the merchant, or undefined (another merchant's is "not found" too); `forUpdate` locks its row. */
export async function getWallet(sql: Sql, params: { merchantId: string; walletId: string; forUpdate?: boolean }): Promise<Wallet | undefined> {
  const { rows } = await sql.query<WalletRow>(`SELECT ${COLUMNS} FROM wallets WHERE id = $1 AND merchant_id = $2${params.forUpdate ? ' FOR UPDATE' : ''}`, [
    params.walletId,
    params.merchantId,
  ]);
  return rows[0] && toWallet(rows[0]);
}

/**
 * Makes a verified wallet the default of its chain: the one live sessions and payment links that
 * name no `merchantWallet` pay. The previous default, if any, stops being it in the same
 * transaction (the database allows one default per merchant and chain). Run it in a transaction:
 * the two updates must commit together.
 * @throws {NotFoundError} unknown wallet; {ConflictError} unverified wallet.
 */
export async function setDefaultWallet(sql: Sql, params: { merchantId: string; walletId: string }): Promise<Wallet> {
  const { rows } = await sql.query<WalletRow>(`SELECT ${COLUMNS} FROM wallets WHERE id = $1 AND merchant_id = $2 FOR UPDATE`, [
    params.walletId,
    params.merchantId,
  ]);
  const row = rows[0];
  if (!row) throw notFound(`wallet ${params.walletId} not found`);
  if (!row.verified_at) {
    throw conflict(
      `wallet ${row.id} (${row.chain}:${row.address}) is not verified, so it cannot be the default: prove it is yours first (POST /wallets/challenges, then POST /wallets with "default": true)`,
    );
  }
  if (row.is_default) return toWallet(row);
  // Two changes of one chain's default at once would both clear, then both set: one at a time.
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`wallet-default:${params.merchantId}:${row.chain}`]);
  await sql.query('UPDATE wallets SET is_default = false WHERE merchant_id = $1 AND chain = $2 AND is_default', [params.merchantId, row.chain]);
  const updated = await sql.query<WalletRow>(`UPDATE wallets SET is_default = true WHERE id = $1 RETURNING ${COLUMNS}`, [row.id]);
  return toWallet(updated.rows[0]!);
}

/** The merchant's wallets, oldest first (`chain` filters). */
export async function listWallets(sql: Sql, params: { merchantId: string; chain?: ChainName }): Promise<Wallet[]> {
  const { rows } = await sql.query<WalletRow>(
    `SELECT ${COLUMNS} FROM wallets WHERE merchant_id = $1 AND ($2::text IS NULL OR chain = $2) ORDER BY created_at, id`,
    [params.merchantId, params.chain ?? null],
  );
  return rows.map(toWallet);
}

export interface WalletChallenge {
  id: string;
  chain: ChainName;
  address: string;
  /** The exact text the wallet signs (EIP-191 `personal_sign` on EVM, ed25519 over UTF-8 on solana). */
  message: string;
  expiresAt: Date;
}

/** Issues a single-use message for the wallet to sign. */
export async function createWalletChallenge(sql: Sql, params: { merchantId: string; chain: ChainName; address: string; now?: Date }): Promise<WalletChallenge> {
  const address = requireAddress(params.chain, params.address);
  const expiresAt = new Date((params.now ?? new Date()).getTime() + CHALLENGE_TTL_MS);
  const id = newId('wch');
  const message = [
    'svc gateway: prove ownership of a receiving wallet',
    `Merchant: ${params.merchantId}`,
    `Chain: ${params.chain}`,
    `Address: ${address}`,
    `Nonce: ${randomBase62(24)}`,
    `Expires: ${expiresAt.toISOString()}`,
  ].join('\n');
  await sql.query('INSERT INTO wallet_challenges (id, merchant_id, chain, address, message, expires_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    params.merchantId,
    params.chain,
    address,
    message,
    expiresAt,
  ]);
  return { id, chain: params.chain, address, message, expiresAt };
}

/** A challenge of the merchant that can still be signed (unused, unexpired), to show again; undefined otherwise. */
export async function getOpenWalletChallenge(sql: Sql, params: { merchantId: string; challengeId: string }): Promise<WalletChallenge | undefined> {
  const { rows } = await sql.query<{ id: string; chain: ChainName; address: string; message: string; expires_at: Date }>(
    'SELECT id, chain, address, message, expires_at FROM wallet_challenges WHERE id = $1 AND merchant_id = $2 AND used_at IS NULL AND expires_at > now()',
    [params.challengeId, params.merchantId],
  );
  const row = rows[0];
  return row && { id: row.id, chain: row.chain, address: row.address, message: row.message, expiresAt: row.expires_at };
}

/**
 * Checks a signature over a challenge and, when it holds, adds the wallet as verified. The
 * challenge is consumed in the same statement that checks it is unused and unexpired, so one
 * signature verifies at most once.
 */
export async function verifyWalletChallenge(
  sql: Sql,
  params: { merchantId: string; challengeId: string; signature: string; makeDefault?: boolean; now?: Date },
): Promise<Wallet> {
  const { rows } = await sql.query<{ chain: ChainName; address: string; message: string; expires_at: Date; used_at: Date | null }>(
    'SELECT chain, address, message, expires_at, used_at FROM wallet_challenges WHERE id = $1 AND merchant_id = $2',
    [params.challengeId, params.merchantId],
  );
  const challenge = rows[0];
  if (!challenge) throw notFound(`wallet challenge ${params.challengeId} not found`);
  if (challenge.used_at) throw badRequest('this wallet challenge was already used; request a new one');
  if (challenge.expires_at.getTime() < (params.now ?? new Date()).getTime()) throw badRequest('this wallet challenge has expired; request a new one');
  // Key signatures only: a wallet proven here receives live money, and an ERC-1271 answer depends on
  // contract code that could change what it accepts.
  const valid = await verifyWalletSignature({ chain: challenge.chain, address: challenge.address, message: challenge.message, signature: params.signature });
  if (!valid) throw badRequest(`signature does not verify for ${challenge.address} over the challenge message`);
  const consumed = await sql.query('UPDATE wallet_challenges SET used_at = now() WHERE id = $1 AND used_at IS NULL', [params.challengeId]);
  if (consumed.rowCount !== 1) throw badRequest('this wallet challenge was already used; request a new one');
  return addWallet(sql, {
    merchantId: params.merchantId,
    chain: challenge.chain,
    address: challenge.address,
    verifiedBy: challenge.chain === 'solana' ? 'ed25519' : 'eip191',
    makeDefault: params.makeDefault ?? false,
  });
}
