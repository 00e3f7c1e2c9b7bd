import { prepared, type Sql } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { loadChains, currencyDecimals, tokensFor, type ChainConfig, type Currency } from '../internal/chains.ts';
import { canonicalAddress, unreceivableReason } from '../internal/addresses.ts';
import { AmountError, parseAmount } from '../internal/money.ts';
import { badRequest, conflict } from '../internal/errors.ts';
import { sandboxWallet } from '../internal/sandboxIds.ts';
import { resolveAttribution, type Attribution } from './attribution.ts';

/** The creation's two reads (prepared: they run at every creation, and their generic plans are key lookups). */
const SELECT_DEFAULT_WALLET = prepared('SELECT address FROM wallets WHERE merchant_id = $1 AND chain = $2 AND is_default FOR KEY SHARE');
/** Without a default: the chain's verified wallets, two at most (one is paid, two are ambiguous). Rare, so not prepared. */
const SELECT_VERIFIED_WALLETS =
  'SELECT address, sole_wallet_payable FROM wallets WHERE merchant_id = $1 AND chain = $2 AND verified_at IS NOT NULL ORDER BY id LIMIT 2 FOR KEY SHARE';
const SELECT_MERCHANT_CHECKS = prepared(
  `SELECT (SELECT accept_bridged_tokens FROM merchants WHERE id = $1) AS accept_bridged_tokens,
          (SELECT default_attribution FROM merchants WHERE id = $1) AS default_attribution,
          $4::boolean AND EXISTS (SELECT 1 FROM wallets WHERE chain = $2 AND address = $3 AND merchant_id <> $1 AND verified_at IS NOT NULL) AS verified_elsewhere`,
);

/**
 * A session's terms, checked before anything is written: the same checks for `POST /sessions`
 * (and the other create routes), `POST /payment-links` and each `/pay/{link}` visit.
 */

/** Session lifetime bounds in seconds: one minute to seven days (Stripe Checkout allows 30 min..24 h; payments by bank-free wallets need less, invoices more). */
export const EXPIRES_IN = { min: 60, max: 7 * 86400, default: 3600 } as const;

/**
 * Amount bounds in token units, as decimal text. 0.01 is one cent, the smallest amount a
 * stablecoin price is written in; 1,000,000 caps a fat-fingered amount (raise it in code if a
 * merchant needs more).
 */
export const AMOUNT_LIMITS = { min: '0.01', max: '1000000' } as const;

/**
 * The lower minimum of a facilitator settlement's session (x402 `/verify` and `/settle`, issue 29):
 * 0.001 token, x402's usual price per request. Such a session is bound to its own transaction by
 * a claim, not by a unique due amount, so it needs no room below the cent; below 0.001 the
 * relayer's (fee payer's) gas for the settlement costs about as much as the payment or more
 * (docs/agents.md). Every other session keeps {@link AMOUNT_LIMITS}.min.
 */
export const SETTLEMENT_MIN_AMOUNT = '0.001';

/**
 * Solana has no block depth rule in chains/solana.json (it uses commitment levels); a session
 * records 32, the depth after which a block is `finalized` (31+ confirmed blocks on top).
 */
const SOLANA_FINALIZED_DEPTH = 32;

/** The decimals of `currency` on `chain`, or a 400 when the pair is not offered. */
function decimalsFor(chain: ChainConfig, currency: Currency): number {
  const decimals = currencyDecimals(chain, currency);
  if (decimals === undefined) throw badRequest(`${currency} is not offered on ${chain.name}`);
  return decimals;
}

/**
 * Parses a requested amount for `decimals`: positive decimal text, no more decimals than the
 * token has, within {@link AMOUNT_LIMITS}. Every refusal is a 400 that says why.
 */
function parseRequestedAmount(text: string, decimals: number, minimum: string = AMOUNT_LIMITS.min, field = 'amount'): bigint {
  let units: bigint;
  try {
    units = parseAmount(text, decimals);
  } catch (error) {
    if (error instanceof AmountError) throw badRequest(error.message.replace(/^amount/, field));
    throw error;
  }
  if (units <= 0n) throw badRequest(`${field} must be a positive number`);
  if (units < parseAmount(minimum, decimals)) throw badRequest(`${field} ${text} is below the minimum of ${minimum}`);
  if (units > parseAmount(AMOUNT_LIMITS.max, decimals)) throw badRequest(`${field} ${text} is above the maximum of ${AMOUNT_LIMITS.max}`);
  return units;
}

/** Blocks (EVM: the chain's depth rule; solana: {@link SOLANA_FINALIZED_DEPTH}) a payment needs. */
export function requiredConfirmations(chain: ChainConfig): number {
  return typeof chain.confirmations.confirmed === 'number' ? chain.confirmations.confirmed : SOLANA_FINALIZED_DEPTH;
}

/** The spec's flat fee: 1 % (100 basis points), the default of SVC_FEE_BPS. */
export const DEFAULT_FEE_BPS = 100;

/** The flat fee of `amount` at `bps` basis points (default the spec's 1 %), in base units, rounded half up. */
export function feeFor(amount: bigint, bps: number = DEFAULT_FEE_BPS): bigint {
  return (amount * BigInt(bps) + 5_000n) / 10_000n;
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
 * {@link checkSessionTerms}); otherwise the merchant's default wallet on `chain`, chosen
 * explicitly with a live key, in the dashboard or by the operator; otherwise, when the chain has
 * exactly one verified wallet, that one (spec §4.2: `merchantWallet` is "optional when a verified
 * wallet is already configured"), unless it was verified before test keys were barred from adding
 * wallets (migration 033); and a 400 that says which case it is when none of these holds (no
 * verified wallet, or two and no default: the gateway never guesses between wallets). The row
 * paid is held (KEY SHARE) until the transaction ends, so it cannot be removed under a session
 * being created. Sandbox: always the merchant's stable, clearly fake sandbox address
 * (a test key alone is enough to try the whole flow, and no sandbox QR code or instruction ever
 * names a real wallet: real money sent after a test session must not reach the merchant's books);
 * a given `merchantWallet` was checked like a live one, and is not used.
 */
export async function resolvePayTo(
  sql: Sql,
  params: { merchantId: string; chain: ChainName; merchantWallet: string | undefined; livemode: boolean },
): Promise<string> {
  if (!params.livemode) return sandboxWallet(params.chain, params.merchantId);
  if (params.merchantWallet !== undefined) return params.merchantWallet;
  const { rows } = await sql.query<{ address: string }>(SELECT_DEFAULT_WALLET, [params.merchantId, params.chain]);
  if (rows[0]) return rows[0].address;
  const { rows: verified } = await sql.query<{ address: string; sole_wallet_payable: boolean }>(SELECT_VERIFIED_WALLETS, [params.merchantId, params.chain]);
  const choose = 'pass merchantWallet, or choose a default with a live key (POST /wallets/{id}/default, or "default": true when adding the wallet)';
  if (verified.length > 1)
    throw badRequest(`merchantWallet is required: this merchant has several verified wallets on ${params.chain} and none is the default; ${choose}`);
  if (verified.length === 1 && verified[0]!.sole_wallet_payable) return verified[0]!.address;
  if (verified.length === 1)
    throw badRequest(
      `merchantWallet is required: this merchant has no default wallet on ${params.chain}, and its one verified wallet there was verified before test keys were barred from adding wallets, so it is paid only once chosen; ${choose}`,
    );
  throw badRequest(`merchantWallet is required: this merchant has no default wallet on ${params.chain}; ${choose}`);
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
  /** `amount` or `address` (attribution.ts); undefined: the merchant's default. */
  attribution?: Attribution | undefined;
  /**
   * {@link SETTLEMENT_MIN_AMOUNT} for a facilitator settlement's session only (x402/facilitator.ts);
   * unset: {@link AMOUNT_LIMITS}.min. Never read from a request: the API's bodies refuse unknown fields.
   */
  minimum?: typeof SETTLEMENT_MIN_AMOUNT | undefined;
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
  /** The mode the session gets: the one asked for or the merchant's default (`amount` on solana). */
  attribution: Attribution;
}

/**
 * Every check a session's terms get, in one place, so that `POST /sessions` (and the other
 * create routes), `POST /payment-links` and each `/pay/{link}` visit refuse the same things:
 * a live session on a chain no ingester watches (409), a currency not offered on the chain,
 * an amount out of the token's decimals or limits, a bad `expiresIn`, an invalid or unusable
 * wallet, `attribution: "address"` on solana, a currency only bridged on the chain for a merchant who has not opted in (400), a
 * live wallet that another merchant has verified (409). Writes nothing.
 */
export async function checkSessionTerms(sql: Sql, params: SessionTerms): Promise<CheckedTerms> {
  const local = checkLocalTerms(params);
  const payTo = await resolvePayTo(sql, {
    merchantId: params.merchantId,
    chain: params.chain,
    merchantWallet: local.merchantWallet,
    livemode: params.livemode,
  });
  // The merchant's flag and, for a live wallet given inline, whether another merchant verified it:
  // one statement (a round trip per check was a tenth of a creation's cost, docs/benchmarks.md).
  const { rows } = await sql.query<MerchantChecks>(SELECT_MERCHANT_CHECKS, [
    params.merchantId,
    params.chain,
    payTo,
    params.livemode && local.merchantWallet !== undefined,
  ]);
  return { ...local, payTo, ...merchantTerms(params, local.chain, payTo, rows[0]!) };
}

/** {@link checkSessionTerms}'s checks that need no database, in its order (their 400s and 409s come first). */
export function checkLocalTerms(params: SessionTerms): Pick<CheckedTerms, 'chain' | 'decimals' | 'amount' | 'expiresIn' | 'merchantWallet'> {
  const chains = params.chains ?? loadChains();
  const chain = chains[params.chain];
  if (!chain) throw badRequest(`unknown chain ${JSON.stringify(params.chain)}`);
  if (params.livemode && params.liveChains && !params.liveChains.includes(params.chain)) {
    throw conflict(
      `${params.chain} is not watched by this gateway in live mode (no ${chain.rpcEnv.http} is configured), so a payment there would never be detected; use a test key, or ask the operator to configure the chain`,
    );
  }
  const decimals = decimalsFor(chain, params.currency);
  // Before the reads: `address` on solana is refused for what it is, whatever else is wrong.
  if (params.attribution !== undefined) resolveAttribution({ requested: params.attribution, merchantDefault: 'amount', chain: params.chain });
  const amount = parseRequestedAmount(params.amount, decimals, params.minimum);
  const expiresIn = params.expiresIn ?? EXPIRES_IN.default;
  if (!Number.isInteger(expiresIn) || expiresIn < EXPIRES_IN.min || expiresIn > EXPIRES_IN.max) {
    throw badRequest(`expiresIn must be a whole number of seconds from ${EXPIRES_IN.min} to ${EXPIRES_IN.max}`);
  }
  const merchantWallet = params.merchantWallet === undefined ? undefined : checkReceivingWallet(chain, params.merchantWallet);
  return { chain, decimals, amount, expiresIn, merchantWallet };
}

/** What the creation reads of its merchant (SELECT_MERCHANT_CHECKS, or the same columns of the one-statement creation). */
export interface MerchantChecks {
  accept_bridged_tokens: boolean | null;
  default_attribution: Attribution | null;
  verified_elsewhere: boolean;
}

/** The token lists a session on `chain` in `currency` counts, without and with bridged tokens (the merchant's flag picks one). */
export function tokenLists(chain: ChainConfig, currency: Currency): { native: string[]; withBridged: string[] } {
  return {
    native: tokensFor(chain, currency, { includeBridged: false }).map((token) => token.address),
    withBridged: tokensFor(chain, currency, { includeBridged: true }).map((token) => token.address),
  };
}

/**
 * The terms that depend on the merchant's row, from {@link MerchantChecks}: a 409 for a live
 * inline wallet another merchant verified, a 400 for a currency only bridged on the chain when the
 * merchant has not opted in; otherwise the tokens that count and the session's attribution.
 */
export function merchantTerms(
  params: Pick<SessionTerms, 'chain' | 'currency' | 'attribution'>,
  chain: ChainConfig,
  payTo: string,
  checks: MerchantChecks,
): Pick<CheckedTerms, 'tokens' | 'attribution'> {
  if (checks.verified_elsewhere) throw conflict(`merchantWallet ${payTo} is a verified wallet of another merchant; use a receiving wallet of your own`);
  const includeBridged = checks.accept_bridged_tokens ?? false;
  const tokens = tokensFor(chain, params.currency, { includeBridged }).map((token) => token.address);
  if (tokens.length === 0) throw badRequest(`${params.currency} on ${params.chain} is only offered as a bridged token, which this merchant has not enabled`);
  const attribution = resolveAttribution({ requested: params.attribution, merchantDefault: checks.default_attribution ?? 'amount', chain: params.chain });
  return { tokens, attribution };
}
