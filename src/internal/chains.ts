import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHAIN_NAMES, type ChainName } from './config.ts';
import { canonicalAddress } from './addresses.ts';
import { NonRetryableError } from './errors.ts';

const CHAINS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../chains');

export const CURRENCIES = ['USDT', 'USDC'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** One token contract (EVM) or mint (solana) that counts as `currency`. */
export interface TokenConfig {
  symbol: string;
  currency: Currency;
  address: string;
  decimals: number;
  /** `native`: issued on this chain by the currency's issuer; `bridged`: a bridged representation. */
  variant: 'native' | 'bridged';
  /** Bridged tokens are accepted only when the merchant or operator opts in. */
  acceptedByDefault: boolean;
  tokenProgram?: string;
  note?: string;
  /**
   * Present when the contract implements EIP-3009 `transferWithAuthorization` (Circle's
   * FiatToken): its EIP-712 domain name and version, which x402's `exact` scheme signs over.
   * Only these tokens are offered to x402 clients (docs/agents.md).
   */
  eip3009?: { name: string; version: string; why?: string };
}

/** One `chains/<name>.json`, validated. */
export interface ChainConfig {
  name: ChainName;
  kind: 'evm' | 'solana';
  /** EIP-155 id on EVM chains; the cluster name on solana. */
  chainId: number | string;
  blockTimeMs: number;
  /** A transaction's page on the chain's public block explorer, `{txHash}` replaced by the hash or signature (the dashboard links to it). */
  explorerTxUrl?: string;
  confirmations: {
    /** EVM: blocks on top of the transfer's block; solana: a commitment level. */
    confirmed: number | 'confirmed' | 'finalized';
    settled: 'finalized';
    why: string;
  };
  logs?: { initialRange: number; maxRange: number; backfillBlocks: number };
  rpcEnv: { http: string; ws: string };
  /**
   * Chainlink Data Feeds on this chain (EVM only), by pair (`EUR/USD`, `USDC/USD`): the feed's
   * proxy address and heartbeat. Fiat-priced sessions read them (src/pricing, docs/checkout.md).
   */
  priceFeeds?: Partial<Record<FeedPair, PriceFeedConfig>>;
  priceFeedsSource?: string;
  tokens: TokenConfig[];
}

/** The fiat currencies a price may be written in (issue 26), USD first. */
export const FIAT_CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD'] as const;
export type FiatCurrency = (typeof FIAT_CURRENCIES)[number];

/** The feeds a chain may carry: each non-USD fiat's and each stablecoin's price in USD. */
export const FEED_PAIRS = [...FIAT_CURRENCIES.filter((fiat) => fiat !== 'USD'), ...CURRENCIES].map((base) => `${base}/USD` as const);
export type FeedPair = (typeof FEED_PAIRS)[number];

/** One Chainlink feed: its proxy (EACAggregatorProxy) and how often it is updated at the least. */
export interface PriceFeedConfig {
  address: string;
  heartbeatSeconds: number;
}

function fail(file: string, problem: string): never {
  throw new NonRetryableError(`${file}: ${problem}`);
}

function validate(file: string, expectedName: ChainName, raw: unknown): ChainConfig {
  const chain = raw as ChainConfig;
  if (chain?.name !== expectedName) fail(file, `name must be "${expectedName}"`);
  if (chain.kind !== (expectedName === 'solana' ? 'solana' : 'evm')) fail(file, 'kind does not match the chain');
  if (chain.kind === 'evm' && !(Number.isInteger(chain.chainId) && (chain.chainId as number) > 0)) fail(file, 'chainId must be a positive integer');
  if (!(Number.isInteger(chain.blockTimeMs) && chain.blockTimeMs > 0)) fail(file, 'blockTimeMs must be a positive integer');
  if (chain.explorerTxUrl !== undefined && !/^https:\/\/[^/\s]+\/\S*\{txHash\}/.test(chain.explorerTxUrl)) {
    fail(file, 'explorerTxUrl must be an https URL containing {txHash}');
  }
  const depth = chain.confirmations?.confirmed;
  if (chain.kind === 'evm' && !(Number.isInteger(depth) && (depth as number) >= 1)) fail(file, 'confirmations.confirmed must be a block depth >= 1');
  if (chain.kind === 'evm' && !(chain.logs && chain.logs.initialRange >= 1 && chain.logs.maxRange >= chain.logs.initialRange)) {
    fail(file, 'logs.initialRange must be >= 1 and <= logs.maxRange');
  }
  if (!Array.isArray(chain.tokens) || chain.tokens.length === 0) fail(file, 'tokens must list at least one token');
  if (chain.priceFeeds !== undefined) {
    if (chain.kind !== 'evm') fail(file, 'priceFeeds are Chainlink contracts on EVM chains');
    for (const [pair, feed] of Object.entries(chain.priceFeeds)) {
      if (!(FEED_PAIRS as readonly string[]).includes(pair)) fail(file, `priceFeeds: unknown pair ${pair} (one of ${FEED_PAIRS.join(', ')})`);
      if (!(Number.isInteger(feed?.heartbeatSeconds) && feed!.heartbeatSeconds > 0))
        fail(file, `priceFeeds ${pair}: heartbeatSeconds must be a positive integer`);
      if (canonicalAddress(expectedName, feed!.address) !== feed!.address) fail(file, `priceFeeds ${pair}: address must be a checksummed (EIP-55) address`);
    }
  }
  for (const token of chain.tokens) {
    if (!CURRENCIES.includes(token.currency)) fail(file, `token ${token.symbol}: currency must be USDT or USDC`);
    if (!(Number.isInteger(token.decimals) && token.decimals >= 0 && token.decimals <= 36)) fail(file, `token ${token.symbol}: bad decimals`);
    if (token.eip3009 !== undefined) {
      if (chain.kind !== 'evm') fail(file, `token ${token.symbol}: eip3009 is an EVM standard`);
      if (!(typeof token.eip3009.name === 'string' && token.eip3009.name && typeof token.eip3009.version === 'string' && token.eip3009.version))
        fail(file, `token ${token.symbol}: eip3009 needs the EIP-712 domain's name and version`);
    }
    const canonical = canonicalAddress(expectedName, token.address);
    if (canonical !== token.address)
      fail(file, `token ${token.symbol}: address ${token.address} is not canonical (expected ${canonical ?? 'a valid address'})`);
  }
  return chain;
}

let cache: Record<ChainName, ChainConfig> | undefined;

/** Every chain's configuration, read from `chains/*.json` once and validated. */
export function loadChains(dir = CHAINS_DIR): Record<ChainName, ChainConfig> {
  if (cache && dir === CHAINS_DIR) return cache;
  const chains = {} as Record<ChainName, ChainConfig>;
  for (const name of CHAIN_NAMES) {
    const file = path.join(dir, `${name}.json`);
    chains[name] = validate(file, name, JSON.parse(fs.readFileSync(file, 'utf8')));
  }
  if (dir === CHAINS_DIR) cache = chains;
  return chains;
}

/**
 * The block explorer page of a transaction on `chain`, or undefined when the chain names no
 * explorer. The hash is URL-encoded: it comes from the chain (or a merchant), never trusted as a path.
 */
export function explorerTxUrl(chain: Pick<ChainConfig, 'explorerTxUrl'>, txHash: string): string | undefined {
  return chain.explorerTxUrl?.replace('{txHash}', encodeURIComponent(txHash));
}

/**
 * Tokens that count as `currency` on `chain`: by default the ones accepted by default
 * (bridged variants only on request).
 */
export function tokensFor(chain: ChainConfig, currency: Currency, options: { includeBridged?: boolean } = {}): TokenConfig[] {
  return chain.tokens.filter((token) => token.currency === currency && (token.acceptedByDefault || options.includeBridged));
}

/**
 * The decimals that amounts of `currency` on `chain` are written with. Every accepted token of
 * one currency on one chain shares its decimals (checked here), so an amount means one thing.
 * @returns undefined when the currency is not offered on that chain.
 */
export function currencyDecimals(chain: ChainConfig, currency: Currency): number | undefined {
  const tokens = tokensFor(chain, currency, { includeBridged: true });
  if (tokens.length === 0) return undefined;
  const decimals = new Set(tokens.map((token) => token.decimals));
  if (decimals.size > 1) throw new NonRetryableError(`${chain.name}: ${currency} tokens disagree on decimals`);
  return tokens[0]!.decimals;
}
