import type { Store } from '../store/index.ts';
import type { ChainName } from '../internal/config.ts';
import { formatAmount } from '../internal/money.ts';
import { badRequest, GoneError, notFound, RateLimitedError } from '../internal/errors.ts';
import { createPendingChoice, type PendingChoice } from './choices.ts';
import { toPaymentLink } from './link.ts';
import * as linkSql from './linkSql.ts';
import { linkSessionTerms, MAX_OPEN_SESSIONS_PER_LINK } from './links.ts';

/**
 * A payment link with several options paid with x402 (docs/agents.md, "Waiting sessions"): a
 * standard x402 client can only fetch a URL and pay one of the `accepts` it answers, so
 * `GET /pay/{id}/x402` of such a link opens a session waiting for the choice (a `session_choices`
 * row, nothing reserved) and answers its 402, whose resource is that session's x402 URL; paying
 * one entry chooses the pair (src/x402/choice.ts). The waiting row's terms carry the link's id,
 * so the session the choice makes belongs to the link (`paymentLinkId`, its events and lists).
 * The link's cap on open checkouts ({@link MAX_OPEN_SESSIONS_PER_LINK}) counts these rows with
 * its open sessions, so anonymous fetches cannot pile them up (migration 048 indexes the count).
 */

/** The link's open, unpaid sessions and unexpired waiting rows together, and the seconds until the first ends. $1 link. */
const COUNT_OPEN = `
  SELECT sum(n)::int AS n, min(seconds)::int AS seconds FROM (
    ${linkSql.countOpenLinkSessions()}
    UNION ALL
    SELECT count(*)::int, ceil(extract(epoch FROM min(expires_at) - now()))::int FROM session_choices
     WHERE terms ->> 'paymentLinkId' = $1 AND chosen_at IS NULL AND expires_at > now()
  ) open`;

/**
 * Opens a session waiting for the choice from link `linkId` (several options; a token amount or a fiat price),
 * under the link's lock and its cap on open checkouts.
 * @throws {NotFoundError} no such link; {GoneError} inactive; {InvalidRequestError} a link with
 * one pair (its visit makes the session); {RateLimitedError} the cap is reached.
 */
export async function openWaitingFromLink(
  store: Store,
  params: { linkId: string; monitorWindowSeconds: number; feeBps: number; liveChains: readonly ChainName[] },
): Promise<PendingChoice> {
  return store.transaction(async (sql) => {
    const { rows } = await sql.query(linkSql.lockLinkById(), [params.linkId]);
    const link = rows[0] && toPaymentLink(rows[0]);
    if (!link) throw notFound(`payment link ${params.linkId} not found`);
    if (!link.active) throw new GoneError('this payment link is no longer active');
    if (!link.paymentOptions || link.paymentOptions.length < 2) throw badRequest('this payment link has one chain and token: its visit makes the session');
    const { rows: open } = await sql.query<{ n: number; seconds: number | null }>(COUNT_OPEN, [link.id]);
    if (open[0]!.n >= MAX_OPEN_SESSIONS_PER_LINK) {
      throw new RateLimitedError('too many checkouts of this payment link are open and unpaid; try again in a few minutes', {
        retryAfterSeconds: Math.min(60, Math.max(1, open[0]!.seconds ?? 60)),
      });
    }
    const choice = await createPendingChoice(sql, {
      ...linkSessionTerms(link),
      // A fiat-priced link's waiting session keeps the price: x402 converts it per option (src/x402/choiceOffers.ts).
      ...(link.amount !== null ? { amount: formatAmount(link.amount, link.decimals) } : { price: link.price! }),
      paymentOptions: link.paymentOptions,
      monitorWindowSeconds: params.monitorWindowSeconds,
      feeBps: params.feeBps,
      liveChains: params.liveChains,
    });
    // createPendingChoice takes no link; the choice spreads the terms into the session it makes (choices.ts `chooseOption`).
    await sql.query(`UPDATE session_choices SET terms = terms || jsonb_build_object('paymentLinkId', $2::text) WHERE id = $1`, [choice.id, link.id]);
    return { ...choice, terms: { ...choice.terms, paymentLinkId: link.id } };
  });
}

/** The link a waiting (or chosen) session was opened from by {@link openWaitingFromLink}, or undefined. */
export async function linkOfWaiting(store: Store, id: string): Promise<string | undefined> {
  const { rows } = await store.query<{ link: string | null }>(`SELECT terms ->> 'paymentLinkId' AS link FROM session_choices WHERE id = $1`, [id]);
  return rows[0]?.link ?? undefined;
}
