import { prepared, type Sql } from '../store/index.ts';
import { sessionColumns, toSession, type Session } from './session.ts';
import type { SessionTerms } from './terms.ts';
import { insertSession, newSolanaReference } from './sessionInsert.ts';
import * as sessionSql from './sessionSql.ts';
import type { PurchaseInput } from './purchase.ts';
import type { FiatPrice, PriceQuote } from '../pricing/types.ts';
import type { PaymentOption } from './options.ts';
import type { LinkVisitsFilter } from './linkVisits.ts';

/** The operations on payment sessions: create, read, list, and the few writes outside the engine. */

/** What a merchant asks for; text exactly as it came over the wire (validated here). */
export interface CreateSessionParams extends SessionTerms, PurchaseInput {
  metadata?: Record<string, string> | undefined;
  webhookUrl?: string | undefined;
  successUrl?: string | undefined;
  paymentLinkId?: string | undefined;
  /**
   * The customer's choice among several pairs (choices.ts, a link's visit): the pairs offered, and
   * for a session that existed before the choice its id and the seconds left of its lifetime.
   */
  chosen?: { paymentOptions: PaymentOption[]; id?: string | undefined; secondsLeft?: number | undefined } | undefined;
  /** From config.monitorWindowSeconds. */
  monitorWindowSeconds: number;
  /**
   * From config.feeBps: the operator's flat fee, stored with the session (a later change of the
   * rate does not touch it). Unset: the spec's 1 %; every path of the daemon passes the config's.
   */
  feeBps?: number | undefined;
  /**
   * A fiat price and the quote that made `amount` from it (src/pricing: the caller converts it
   * before creating; `amount` is then the converted token amount). Both or neither.
   */
  price?: FiatPrice | undefined;
  priceQuote?: PriceQuote | undefined;
}

/** The read by id, prepared: planned once per connection (its generic plan is the primary key lookup). */
const SELECT_SESSION = prepared(sessionSql.selectSession());

/**
 * Creates a payment session in status `created` (Interface B shows it as `pending`), on `sql`,
 * which must be a transaction (the due-amount lock lasts until it ends). Validates what the
 * schemas cannot, with `checkSessionTerms` (terms.ts); the INSERT is sessionInsert.ts's.
 * @throws {InvalidRequestError} 400 for bad input; {ConflictError} 409 for a live session on an unwatched chain, another
 * merchant's verified wallet, a new inline wallet beyond the merchant's cap of unverified ones, or
 * when no unique due amount is left.
 */
export async function createSession(sql: Sql, params: CreateSessionParams): Promise<Session> {
  const session = await insertSession(sql, params);
  if (!params.price) return session;
  const { rows } = await sql.query(sessionSql.setPrice(), [session.id, JSON.stringify(params.price), JSON.stringify(params.priceQuote)]);
  return toSession(rows[0]!);
}

/** One session of the caller's merchant and mode, or undefined (another merchant's is "not found"). */
export async function getSession(sql: Sql, params: { merchantId: string; livemode: boolean; id: string }): Promise<Session | undefined> {
  const { rows } = await sql.query(SELECT_SESSION, [params.id, params.merchantId, params.livemode]);
  return rows[0] && toSession(rows[0]);
}

/** One session by id alone (no merchant: callers hold the id as a capability, or checked the merchant already), optionally locked. */
export async function getSessionById<K extends keyof Session>(
  sql: Sql,
  params: { id: string; fields: readonly K[]; forUpdate?: boolean },
): Promise<Pick<Session, K> | undefined> {
  const { rows } = await sql.query(sessionSql.selectSessionById({ columns: sessionColumns(params.fields), forUpdate: params.forUpdate }), [params.id]);
  return rows[0] && toSession<K>(rows[0]);
}

/** One session of a merchant and mode, locked until the transaction ends; undefined when there is none. */
export async function lockSession(sql: Sql, params: { merchantId: string; livemode: boolean; id: string }): Promise<Session | undefined> {
  const { rows } = await sql.query(sessionSql.selectSession({ forUpdate: true }), [params.id, params.merchantId, params.livemode]);
  return rows[0] && toSession(rows[0]);
}

/** What a list of sessions may be narrowed to (Interface B's `GET /payments`). */
export interface SessionFilter {
  merchantId: string;
  livemode: boolean;
  /** Session states (not Interface B's names); null for all. */
  statuses: readonly string[] | null;
  chain?: string | undefined;
  currency?: string | undefined;
  createdGte: Date | null;
  createdLt: Date | null;
  /** The id of the session the page starts after (the caller checked it is the merchant's). */
  startingAfter?: string | undefined;
  /** Only the session with this id, paid by a transfer with this hash, or with this metadata value (the dashboard's search). */
  search?: string | undefined;
  /** Link visits without payment (linkVisits.ts): listed (`include`, the default: the API), left out (`hide`: the dashboard) or alone (`only`). */
  linkVisits?: LinkVisitsFilter | undefined;
  /** Only the sessions this payment link made. */
  paymentLinkId?: string | undefined;
  limit: number;
}

/** A page of a merchant's sessions, newest first (cursor: the last id of the previous page). */
export async function listSessions(sql: Sql, filter: SessionFilter): Promise<Session[]> {
  const search = filter.search !== undefined && filter.search !== '';
  const { rows } = await sql.query(sessionSql.listSessions({ search }), [
    filter.merchantId,
    filter.livemode,
    filter.statuses,
    filter.chain ?? null,
    filter.currency ?? null,
    filter.createdGte,
    filter.createdLt,
    filter.startingAfter ?? null,
    filter.limit,
    filter.linkVisits ?? 'include',
    filter.paymentLinkId ?? null,
    ...(search ? [filter.search] : []),
  ]);
  return rows.map((row) => toSession(row));
}

/** The merchant's brand as the payer's page reads it with a session (accounts/brand.ts has the rules). */
export interface SessionMerchantBrand {
  accentColor: string | null;
  supportEmail: string | null;
  supportUrl: string | null;
  logoSha256: string | null;
}

/**
 * Sessions by id, each with its merchant's name and brand and the database's clock when read (so
 * expiry is judged on the engine's clock), reading `fields`: the payer's page. Ids that name no
 * session are absent from the map.
 */
export async function getSessionsWithMerchant<K extends keyof Session>(
  sql: Sql,
  ids: readonly string[],
  fields: readonly K[],
): Promise<Map<string, Pick<Session, K> & { merchantName: string; merchantBrand: SessionMerchantBrand; now: Date }>> {
  const { rows } = await sql.query(sessionSql.selectSessionsWithMerchant(sessionColumns([...new Set<keyof Session>(['id', ...fields])])), [ids]);
  return new Map(
    rows.map((row) => {
      const { brandAccentColor, brandSupportEmail, brandSupportUrl, brandLogoSha256, merchantName, now, ...session } = row;
      const merchantBrand = { accentColor: brandAccentColor, supportEmail: brandSupportEmail, supportUrl: brandSupportUrl, logoSha256: brandLogoSha256 };
      return [row.id as string, { ...toSession<K>(session), merchantName: merchantName as string, merchantBrand, now: now as Date }];
    }),
  );
}

/**
 * The flat 1% fee is computed per payment when the session is created ({@link feeFor}, stored
 * in `payment_sessions.fee`). This sums it per currency and chain over a merchant's confirmed and
 * settled payments: what the merchant owes, in base units.
 */
export async function merchantFees(
  sql: Sql,
  params: { merchantId: string; livemode: boolean },
): Promise<{ chain: string; currency: string; decimals: number; payments: number; fee: bigint }[]> {
  const { rows } = await sql.query<{ chain: string; currency: string; decimals: number; payments: string; fee: string }>(sessionSql.sumFees(), [
    params.merchantId,
    params.livemode,
  ]);
  return rows.map((row) => ({ chain: row.chain, currency: row.currency, decimals: row.decimals, payments: Number(row.payments), fee: BigInt(row.fee) }));
}

/** How many of a merchant's sessions are in each state (states with none are absent). */
export async function countSessionsByStatus(sql: Sql, params: { merchantId: string; livemode: boolean }): Promise<Map<string, number>> {
  const { rows } = await sql.query<{ status: string; count: number }>(sessionSql.countByStatus(), [params.merchantId, params.livemode]);
  return new Map(rows.map((row) => [row.status, row.count]));
}

/** Confirmed money of one UTC day, chain and currency (base units, at `decimals`). */
export interface DailyVolume {
  day: string;
  chain: string;
  currency: string;
  decimals: number;
  payments: number;
  amount: bigint;
}

/**
 * Confirmed money (what refunds and the merchant can count) per UTC day of creation, chain and
 * currency, for sessions created since `since`: the dashboard's volume chart.
 */
export async function dailyVolume(sql: Sql, params: { merchantId: string; livemode: boolean; since: Date }): Promise<DailyVolume[]> {
  const { rows } = await sql.query<{ day: string; chain: string; currency: string; decimals: number; payments: number; amount: string }>(
    sessionSql.volumeByDay(),
    [params.merchantId, params.livemode, params.since],
  );
  return rows.map((row) => ({ ...row, amount: BigInt(row.amount) }));
}

/** Moves a session's expiry to `now() + offsetSeconds` when that is sooner (never later): the sandbox's simulated expiry. */
export async function expireSooner(sql: Sql, sessionId: string, offsetSeconds: number): Promise<void> {
  await sql.query(sessionSql.expireSooner(), [sessionId, offsetSeconds]);
}

/** The session's reference, giving it a fresh one first when it has none (the sandbox routes simulated payments by it). */
export async function ensureReference(sql: Sql, session: Pick<Session, 'id' | 'reference'>): Promise<string> {
  if (session.reference) return session.reference;
  const { rows } = await sql.query<{ reference: string }>(sessionSql.assignReference(), [session.id, newSolanaReference()]);
  return rows[0]!.reference;
}

/** The merchant of a sandbox session, or undefined (a live session is "not found" to the sandbox). */
export async function sandboxSessionMerchant(sql: Sql, sessionId: string): Promise<string | undefined> {
  const { rows } = await sql.query<{ merchant_id: string }>(sessionSql.selectSandboxSessionMerchant(), [sessionId]);
  return rows[0]?.merchant_id;
}
