import type { Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { loadChains, currencyDecimals, tokensFor, type ChainConfig, type Currency } from '../internal/chains.ts';
import { canonicalAddress, unreceivableReason } from '../internal/addresses.ts';
import { AmountError, parseAmount } from '../internal/money.ts';
import { badRequest, conflict } from '../internal/errors.ts';
import { newId } from '../internal/crypto.ts';
import { getBase58Decoder } from '@solana/kit';
import { randomBytes } from 'node:crypto';
import { sandboxWallet } from '../sandbox/fakes.ts';
import { registerInlineWallet } from '../accounts/walletRules.ts';
import { SESSION_COLUMNS, toSession, type Session } from '../payments/session.ts';

/** Session lifetime bounds in seconds: one minute to seven days (Stripe Checkout allows 30 min..24 h; payments by bank-free wallets need less, invoices more). */
export const EXPIRES_IN = { min: 60, max: 7 * 86400, default: 3600 } as const;

/**
 * Amount bounds in token units, as decimal text. 0.01 is one cent, the smallest amount a
 * stablecoin price is written in; 1,000,000 caps a fat-fingered amount (raise it in code if a
 * merchant needs more).
 */
export const AMOUNT_LIMITS = { min: '0.01', max: '1000000' } as const;

/**
 * Solana has no block depth rule in chains/solana.json (it uses commitment levels); a session
 * records 32, the depth after which a block is `finalized` (31+ confirmed blocks on top).
 */
export const SOLANA_FINALIZED_DEPTH = 32;

/** What a merchant asks for; text exactly as it came over the wire (validated here). */
export interface CreateSessionParams extends SessionTerms {
  metadata?: Record<string, string> | undefined;
  webhookUrl?: string | undefined;
  successUrl?: string | undefined;
  paymentLinkId?: string | undefined;
  /** From config.monitorWindowSeconds. */
  monitorWindowSeconds: number;
}

/** The decimals of `currency` on `chain`, or a 400 when the pair is not offered. */
export function decimalsFor(chain: ChainConfig, currency: Currency): number {
  const decimals = currencyDecimals(chain, currency);
  if (decimals === undefined) throw badRequest(`${currency} is not offered on ${chain.name}`);
  return decimals;
}

/**
 * Parses a requested amount for `decimals`: positive decimal text, no more decimals than the
 * token has, within {@link AMOUNT_LIMITS}. Every refusal is a 400 that says why.
 */
export function parseRequestedAmount(text: string, decimals: number, field = 'amount'): bigint {
  let units: bigint;
  try {
    units = parseAmount(text, decimals);
  } catch (error) {
    if (error instanceof AmountError) throw badRequest(error.message.replace(/^amount/, field));
    throw error;
  }
  if (units <= 0n) throw badRequest(`${field} must be a positive number`);
  if (units < parseAmount(AMOUNT_LIMITS.min, decimals)) throw badRequest(`${field} ${text} is below the minimum of ${AMOUNT_LIMITS.min}`);
  if (units > parseAmount(AMOUNT_LIMITS.max, decimals)) throw badRequest(`${field} ${text} is above the maximum of ${AMOUNT_LIMITS.max}`);
  return units;
}

/** Blocks (EVM: the chain's depth rule; solana: {@link SOLANA_FINALIZED_DEPTH}) a payment needs. */
export function requiredConfirmations(chain: ChainConfig): number {
  return typeof chain.confirmations.confirmed === 'number' ? chain.confirmations.confirmed : SOLANA_FINALIZED_DEPTH;
}

/** The flat 1% fee in base units, rounded half up. */
export function feeFor(amount: bigint): bigint {
  return (amount + 50n) / 100n;
}

/**
 * Largest offset added to make a due amount unique: below one cent (10^(decimals-2) base
 * units), so the payer never pays a visible cent more than asked. At 6 decimals that is 10,000
 * concurrent sessions for the same amount on one wallet and chain.
 */
export function dueOffsetBound(decimals: number): bigint {
  return 10n ** BigInt(Math.max(decimals - 2, 0));
}

/**
 * Checks a receiving wallet given for `chain`: a valid address (returned in canonical form) that
 * can receive a payment the merchant can spend, so not a burn address, a program id, or one of
 * the chain's own token contracts or mints. Every refusal is a 400 naming `field` and why.
 */
export function checkReceivingWallet(chain: ChainConfig, text: string, field = 'merchantWallet'): string {
  const canonical = canonicalAddress(chain.name, text);
  if (!canonical) {
    throw badRequest(
      chain.name === 'solana'
        ? `${field} ${JSON.stringify(text)} is not a valid solana address (base58 of a 32-byte key)`
        : `${field} ${JSON.stringify(text)} is not a valid ${chain.name} address (0x and 40 hex digits; mixed case must be a correct EIP-55 checksum)`,
    );
  }
  const reason = unreceivableReason(chain.name, canonical, chain.tokens);
  if (reason) throw badRequest(`${field} ${canonical} ${reason} on ${chain.name}: funds sent there cannot be spent; give a wallet you control`);
  return canonical;
}

/**
 * The receiving wallet. Live: `merchantWallet` when given (already checked and canonical, see
 * {@link checkSessionTerms}), otherwise the merchant's default wallet on `chain`, chosen
 * explicitly with a live key or by the operator (never inferred: adding a wallet does not change
 * where live payments go), and a 400 when there is neither. The default's row is held (KEY SHARE)
 * until the transaction ends, so it cannot be removed under a session being created. Sandbox: always the merchant's stable, clearly fake sandbox address
 * (a test key alone is enough to try the whole flow, and no sandbox QR code or instruction ever
 * names a real wallet: real money sent after a test session must not reach the merchant's books);
 * a given `merchantWallet` was checked like a live one, and is not used.
 */
async function resolvePayTo(sql: Sql, params: { merchantId: string; chain: ChainName; merchantWallet: string | undefined; livemode: boolean }): Promise<string> {
  if (!params.livemode) return sandboxWallet(params.chain, params.merchantId);
  if (params.merchantWallet !== undefined) return params.merchantWallet;
  const { rows } = await sql.query<{ address: string }>('SELECT address FROM wallets WHERE merchant_id = $1 AND chain = $2 AND is_default FOR KEY SHARE', [
    params.merchantId,
    params.chain,
  ]);
  if (!rows[0]) {
    throw badRequest(
      `merchantWallet is required: this merchant has no default wallet on ${params.chain}; pass merchantWallet, or choose a default with a live key (POST /wallets/{id}/default, or "default": true when adding the wallet)`,
    );
  }
  return rows[0].address;
}

/**
 * Picks the due amount: `amount + k` for the smallest k >= 0 that no session reserving the same
 * (chain, currency, pay_to) holds while its monitoring window is open. Must run in the
 * transaction that inserts the session, after {@link lockDueAmounts} for the same amount.
 * Reservations span both modes: a sandbox and a live session never ask for the same amount of the
 * same token on the same address (sandbox sessions pay to fake addresses, but sessions created
 * before that rule, or a live session given a sandbox address, could share one), so a real
 * transfer can only ever fit one of them.
 */
export async function pickDueAmount(
  sql: Sql,
  params: { chain: ChainName; currency: Currency; payTo: string; amount: bigint; decimals: number },
): Promise<bigint> {
  const bound = dueOffsetBound(params.decimals);
  // `livemode IN (false, true)` is "either mode", written so that the payment_sessions_match index
  // (livemode, chain, pay_to, amount_due, …) is still used: one index range per mode.
  const { rows } = await sql.query<{ amount_due: string }>(
    `SELECT DISTINCT amount_due::text FROM payment_sessions
     WHERE livemode IN (false, true) AND chain = $1 AND currency = $2 AND pay_to = $3
       AND amount_due >= $4::numeric AND amount_due < $4::numeric + $5::numeric AND monitor_until > now()
     ORDER BY 1`,
    [params.chain, params.currency, params.payTo, params.amount.toString(), bound.toString()],
  );
  const taken = rows.map((row) => BigInt(row.amount_due)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let candidate = params.amount;
  for (const due of taken) {
    if (due === candidate) candidate++;
    else if (due > candidate) break;
  }
  if (candidate - params.amount >= bound) {
    throw conflict(
      `too many open sessions ask for ${params.currency} amount ${params.amount} base units on ${params.chain} to wallet ${params.payTo}; wait for some to expire or vary the amount`,
    );
  }
  return candidate;
}

/**
 * Serialises due-amount picks that could collide, until the transaction ends. A pick for
 * `amount` looks at [amount, amount + bound); two such ranges overlap only when the amounts are
 * less than `bound` apart. Cutting the amount line into buckets of `bound` and locking buckets
 * b and b+1 (b = amount / bound, always in that order, so no deadlock) makes any two
 * overlapping picks share a lock, while different prices on one wallet are created in parallel
 * (a single lock per wallet made a busy merchant's creations queue behind each other).
 */
export async function lockDueAmounts(
  sql: Sql,
  params: { chain: ChainName; currency: Currency; payTo: string; amount: bigint; decimals: number },
): Promise<void> {
  const bucket = params.amount / dueOffsetBound(params.decimals);
  for (const key of dueLockKeys({ ...params, bucket })) {
    await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [key]);
  }
}

/** The advisory-lock texts {@link lockDueAmounts} takes, in order (exported for tests that hold them). */
export function dueLockKeys(params: { chain: ChainName; currency: Currency; payTo: string; bucket: bigint }): string[] {
  const base = `due:${params.chain}:${params.currency}:${params.payTo}`;
  return [`${base}:${params.bucket}`, `${base}:${params.bucket + 1n}`];
}

/** A fresh Solana Pay reference: a random 32-byte public key in base58. */
export function newSolanaReference(): string {
  return getBase58Decoder().decode(randomBytes(32));
}

/** What a session (or a payment link, which makes sessions) asks for, before anything is written. */
export interface SessionTerms {
  merchantId: string;
  livemode: boolean;
  amount: string;
  currency: Currency;
  chain: ChainName;
  merchantWallet?: string | undefined;
  /** Seconds; default {@link EXPIRES_IN}.default. */
  expiresIn?: number | undefined;
  /**
   * The chains a live ingester watches (`liveChains(config)`): a live session on any other chain
   * is refused (409), since its payment would never be seen. The API always passes it; leaving it
   * out skips the check (engine tests that make rows without a daemon).
   */
  liveChains?: readonly ChainName[] | undefined;
  chains?: Record<ChainName, ChainConfig> | undefined;
}

/** {@link SessionTerms} checked and resolved: what a session row is made of. */
export interface CheckedTerms {
  chain: ChainConfig;
  decimals: number;
  /** Requested amount in base units. */
  amount: bigint;
  expiresIn: number;
  /** The given `merchantWallet` in canonical form, or undefined. */
  merchantWallet: string | undefined;
  /** Where the payer pays (see {@link resolvePayTo}). */
  payTo: string;
  /** The token contracts or mints that count (bridged ones only for merchants who opt in). */
  tokens: string[];
}

/**
 * Every check a session's terms get, in one place, so that `POST /sessions` (and the other
 * create routes), `POST /payment-links` and each `/pay/{link}` visit refuse the same things:
 * a live session on a chain no ingester watches (409), a currency not offered on the chain,
 * an amount out of the token's decimals or limits, a bad `expiresIn`, an invalid or unusable
 * wallet, a currency only bridged on the chain for a merchant who has not opted in (400), a
 * live wallet that another merchant has verified (409). Writes nothing.
 */
export async function checkSessionTerms(sql: Sql, params: SessionTerms): Promise<CheckedTerms> {
  const chains = params.chains ?? loadChains();
  const chain = chains[params.chain];
  if (!chain) throw badRequest(`unknown chain ${JSON.stringify(params.chain)}`);
  if (params.livemode && params.liveChains && !params.liveChains.includes(params.chain)) {
    throw conflict(
      `${params.chain} is not watched by this gateway in live mode (no ${chain.rpcEnv.http} is configured), so a payment there would never be detected; use a test key, or ask the operator to configure the chain`,
    );
  }
  const decimals = decimalsFor(chain, params.currency);
  const amount = parseRequestedAmount(params.amount, decimals);
  const expiresIn = params.expiresIn ?? EXPIRES_IN.default;
  if (!Number.isInteger(expiresIn) || expiresIn < EXPIRES_IN.min || expiresIn > EXPIRES_IN.max) {
    throw badRequest(`expiresIn must be a whole number of seconds from ${EXPIRES_IN.min} to ${EXPIRES_IN.max}`);
  }
  const merchantWallet = params.merchantWallet === undefined ? undefined : checkReceivingWallet(chain, params.merchantWallet);
  const payTo = await resolvePayTo(sql, { merchantId: params.merchantId, chain: params.chain, merchantWallet, livemode: params.livemode });
  if (params.livemode && merchantWallet !== undefined) {
    const { rowCount } = await sql.query(
      'SELECT 1 FROM wallets WHERE chain = $1 AND address = $2 AND merchant_id <> $3 AND verified_at IS NOT NULL',
      [params.chain, payTo, params.merchantId],
    );
    if (rowCount) throw conflict(`merchantWallet ${payTo} is a verified wallet of another merchant; use a receiving wallet of your own`);
  }
  const { rows: merchantRows } = await sql.query<{ accept_bridged_tokens: boolean }>('SELECT accept_bridged_tokens FROM merchants WHERE id = $1', [params.merchantId]);
  const includeBridged = merchantRows[0]?.accept_bridged_tokens ?? false;
  const tokens = tokensFor(chain, params.currency, { includeBridged }).map((token) => token.address);
  if (tokens.length === 0) throw badRequest(`${params.currency} on ${params.chain} is only offered as a bridged token, which this merchant has not enabled`);
  return { chain, decimals, amount, expiresIn, merchantWallet, payTo, tokens };
}

/**
 * Creates a payment session in status `created` (Interface B shows it as `pending`), on `sql`,
 * which must be a transaction (the due-amount lock lasts until it ends). Validates what the
 * schemas cannot, with {@link checkSessionTerms}.
 * @throws {HttpError} 400 for bad input; 409 for a live session on an unwatched chain, another
 * merchant's verified wallet, a new inline wallet beyond the merchant's cap of unverified ones, or
 * when no unique due amount is left.
 */
export async function createSession(sql: Sql, params: CreateSessionParams): Promise<Session> {
  const { chain, decimals, amount, expiresIn, merchantWallet, payTo, tokens } = await checkSessionTerms(sql, params);
  // The ingesters watch the `wallets` table: a live session paying to a wallet given inline must
  // put that wallet there (unverified, within a cap per merchant), or its payment would never be seen.
  if (params.livemode && merchantWallet !== undefined) {
    await registerInlineWallet(sql, { merchantId: params.merchantId, chain: params.chain, address: payTo });
  }

  const tuple = { chain: params.chain, currency: params.currency, payTo };
  await lockDueAmounts(sql, { ...tuple, amount, decimals });
  const amountDue = await pickDueAmount(sql, { ...tuple, amount, decimals });

  const { rows } = await sql.query(
    `INSERT INTO payment_sessions AS s (id, merchant_id, livemode, status, chain, currency, decimals, amount, amount_due, fee,
       token_addresses, pay_to, reference, required_confirmations, metadata, webhook_url, success_url, payment_link_id,
       expires_at, monitor_until)
     VALUES ($1, $2, $3, 'created', $4, $5, $6, $7::numeric, $8::numeric, $9::numeric, $10, $11, $12, $13, $14, $15, $16, $17,
       now() + make_interval(secs => $18), now() + make_interval(secs => $18 + $19))
     RETURNING ${SESSION_COLUMNS}`,
    [
      newId('ses'),
      params.merchantId,
      params.livemode,
      params.chain,
      params.currency,
      decimals,
      amount.toString(),
      amountDue.toString(),
      feeFor(amount).toString(),
      tokens,
      payTo,
      params.chain === 'solana' ? newSolanaReference() : null,
      requiredConfirmations(chain),
      params.metadata ?? {},
      params.webhookUrl ?? null,
      params.successUrl ?? null,
      params.paymentLinkId ?? null,
      expiresIn,
      params.monitorWindowSeconds,
    ],
  );
  return toSession(rows[0]!);
}

/** One session of the caller's merchant and mode, or undefined (another merchant's is "not found"). */
export async function getSession(sql: Sql, params: { merchantId: string; livemode: boolean; id: string }): Promise<Session | undefined> {
  const { rows } = await sql.query(`SELECT ${SESSION_COLUMNS} FROM payment_sessions s WHERE s.id = $1 AND s.merchant_id = $2 AND s.livemode = $3`, [
    params.id,
    params.merchantId,
    params.livemode,
  ]);
  return rows[0] && toSession(rows[0]);
}
