import type { Store } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { CURRENCIES, tokensFor, type ChainConfig } from '../internal/chains.ts';
import { formatAmount, parseAmount } from '../internal/money.ts';
import { optionsOf } from '../payments/options.ts';
import { listDiscoverableLinks, type DiscoverableLink } from '../payments/links.ts';
import type { Session } from '../payments/session.ts';
import { requirementsFor, type X402Offer } from './requirements.ts';
import type { PaymentRequirements } from './wire.ts';

/**
 * x402 discovery (the bazaar extension's `GET /discovery/resources`, docs/agents.md "Discovery"):
 * the payment links their merchants opted in, as x402 resources an agent can pay. Only what a
 * payer could pay here is listed: active live links on a chain and currency x402 takes in this
 * process; nothing about other links, sessions, test mode or merchants' private fields.
 */

/** Default and largest page, as the bazaar's reference facilitators (1..100, default 20). */
export const DISCOVERY_DEFAULT_LIMIT = 20;
export const DISCOVERY_MAX_LIMIT = 100;

/** One listed resource: @x402/extensions' `DiscoveryResource`. */
export interface DiscoveryResource {
  resource: string;
  type: 'http';
  x402Version: 2;
  accepts: PaymentRequirements[];
  lastUpdated: string;
  description: string;
  mimeType: 'application/json';
  serviceName?: string;
  extensions: { bazaar: typeof BAZAAR_GET };
}

/** The page: @x402/extensions' `DiscoveryResourcesResponse`. */
export interface DiscoveryResourcesResponse {
  x402Version: 2;
  items: DiscoveryResource[];
  pagination: { limit: number; offset: number; total: number };
}

/** The filters @x402/extensions' `withBazaar(...).listResources` sends. */
export interface DiscoveryQuery {
  type?: string | undefined;
  payTo?: string | undefined;
  scheme?: string | undefined;
  network?: string | undefined;
  extensions?: string | undefined;
  limit?: number | undefined;
  offset?: number | undefined;
}

/**
 * The bazaar extension each resource carries: a plain GET with no input, answering JSON (the 402,
 * then the session's status once paid). Its `schema` validates its `info` (the bazaar spec's rule).
 */
const BAZAAR_GET = {
  info: { input: { type: 'http', method: 'GET' }, output: { type: 'json' } },
  schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      input: {
        type: 'object',
        properties: { type: { type: 'string', const: 'http' }, method: { type: 'string', enum: ['GET'] } },
        required: ['type', 'method'],
        additionalProperties: false,
      },
      output: { type: 'object', properties: { type: { type: 'string' } }, required: ['type'] },
    },
    required: ['input'],
  },
} as const;

/** What {@link listDiscoveryResources} needs: the store, the chains, and which offers x402 takes here. */
export interface DiscoveryDeps {
  store: Store;
  publicUrl: string;
  liveChains: readonly ChainName[];
  chains: Record<ChainName, ChainConfig>;
  /** X402.offerOf; undefined where x402 does not run in this process (then nothing is listed). */
  offerOf: ((session: Pick<Session, 'chain' | 'livemode' | 'tokenAddresses'>) => X402Offer | undefined) | undefined;
}

/** The live offer a link's sessions would make: its chain, currency and the merchant's bridged-token choice. */
function linkOffer(deps: DiscoveryDeps, chain: ChainName, currency: (typeof CURRENCIES)[number], acceptBridged: boolean): X402Offer | undefined {
  const tokenAddresses = tokensFor(deps.chains[chain], currency, { includeBridged: acceptBridged }).map((token) => token.address);
  return tokenAddresses.length > 0 ? deps.offerOf?.({ chain, livemode: true, tokenAddresses }) : undefined;
}

/**
 * The `chain:currency:acceptBridged` keys x402 can take here that match the query's network and
 * scheme: the listing's SQL filter, so `total` counts only payable links.
 */
function payableKeys(deps: DiscoveryDeps, query: DiscoveryQuery): string[] {
  if ((query.type !== undefined && query.type !== 'http') || (query.scheme !== undefined && query.scheme !== 'exact')) return [];
  // No resource carries an extension besides bazaar: asking for another lists nothing.
  if (query.extensions !== undefined && query.extensions !== 'bazaar') return [];
  const keys: string[] = [];
  for (const chain of deps.liveChains) {
    for (const currency of CURRENCIES) {
      for (const bridged of [false, true]) {
        const offer = linkOffer(deps, chain, currency, bridged);
        if (offer && (query.network === undefined || offer.network === query.network)) keys.push(`${chain}:${currency}:${bridged}`);
      }
    }
  }
  return keys;
}

/** The bazaar's rule for `serviceName` (1..32 printable ASCII characters); a merchant name outside it is left out, as facilitators drop it. */
const serviceName = (name: string): boolean => /^[\x20-\x7e]{1,32}$/.test(name);

/**
 * What the link's 402 would list: one entry per pair of the link (its options, else its own pair)
 * that x402 takes here and that has a wallet, each with the link's amount in that token's base
 * units ("that many units of whichever token is chosen") and that chain's wallet.
 */
function acceptsOf(deps: DiscoveryDeps, row: DiscoverableLink): PaymentRequirements[] {
  const { link } = row;
  const amount = formatAmount(link.amount!, link.decimals);
  return optionsOf(link).flatMap((pair) => {
    const offer = linkOffer(deps, pair.chain, pair.currency, row.acceptBridged);
    const payTo = link.merchantWallet ?? row.wallets[pair.chain];
    if (!offer || !payTo) return [];
    // The link's price to its wallet; each GET opens a session whose 402 names the exact due
    // amount (a few base units more in `amount` attribution) and, in `address` mode, its deposit address.
    return [requirementsFor(offer, { payTo, amount: parseAmount(amount, offer.token.decimals), secondsLeft: link.expiresIn })];
  });
}

function resourceOf(deps: DiscoveryDeps, row: DiscoverableLink): DiscoveryResource {
  const { link } = row;
  const options = optionsOf(link);
  const amount = formatAmount(link.amount!, link.decimals);
  const price =
    options.length === 1
      ? `${amount} ${link.currency} on ${link.chain}`
      : `${amount} in one of ${options.map((pair) => `${pair.currency} on ${pair.chain}`).join(', ')}`;
  return {
    resource: `${deps.publicUrl}/pay/${encodeURIComponent(link.id)}/x402`,
    type: 'http',
    x402Version: 2,
    accepts: acceptsOf(deps, row),
    lastUpdated: link.updatedAt.toISOString(),
    description: link.description ? `${link.description} (${price})` : price,
    mimeType: 'application/json',
    ...(serviceName(row.merchantName) ? { serviceName: row.merchantName } : {}),
    extensions: { bazaar: BAZAAR_GET },
  };
}

/** A page of discoverable payment links as x402 resources, newest first. */
export async function listDiscoveryResources(deps: DiscoveryDeps, query: DiscoveryQuery): Promise<DiscoveryResourcesResponse> {
  const limit = query.limit ?? DISCOVERY_DEFAULT_LIMIT;
  const offset = query.offset ?? 0;
  const { links, total } = await listDiscoverableLinks(deps.store, { pairs: payableKeys(deps, query), payTo: query.payTo, limit, offset });
  return { x402Version: 2, items: links.map((row) => resourceOf(deps, row)), pagination: { limit, offset, total } };
}
