import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import type { Sql } from '../../store/index.ts';
import { checkSessionTerms } from '../../payments/terms.ts';
import { createSession, type CreateSessionParams } from '../../payments/sessions.ts';
import { dueOffsetBound, lockDueAmounts } from '../../payments/dueAmounts.ts';
import type { Currency } from '../../internal/chains.ts';
import { liveChains, type ChainName } from '../../internal/config.ts';
import { formatAmount } from '../../internal/money.ts';
import { HttpError, notFound } from '../../internal/errors.ts';
import { errorResponses } from '../schemas.ts';
import { checkoutUrl } from '../views.ts';
import { sendMessagePage, wantsPage } from '../../checkout/index.ts';

/** One row of payment_links as the routes read it. */
export interface LinkRow {
  id: string;
  livemode: boolean;
  chain: ChainName;
  currency: Currency;
  decimals: number;
  amount: string;
  merchant_wallet: string | null;
  metadata: Record<string, string>;
  webhook_url: string | null;
  success_url: string | null;
  expires_in: number;
  active: boolean;
  sessions_created: number;
  created_at: Date;
  updated_at: Date;
  merchant_id: string;
}

/** The columns every payment-link query selects. */
export const LINK_COLUMNS = `id, merchant_id, livemode, chain, currency, decimals, amount::text, merchant_wallet, metadata, webhook_url, success_url,
  expires_in, active, sessions_created, created_at, updated_at`;

/**
 * Unpaid, unexpired sessions one payment link may have open at once. 200 concurrent checkouts of
 * one link is a busy shop; a flood of visits waits for some to expire instead of piling up.
 */
export const MAX_OPEN_SESSIONS_PER_LINK = 200;

/**
 * Due amounts that unpaid link sessions may hold at one price on one wallet (chain, currency,
 * receiving address, amount), over every link and the whole monitoring window: a session keeps
 * its due amount reserved until `monitor_until` (expiry plus the late-payment window, 24 h by
 * default), long after it stops counting as open. A 6-decimal token has 10,000 due amounts per
 * price (see dueOffsetBound); this leaves nine tenths of them to the merchant's own sessions
 * whatever anonymous visitors do.
 */
export const MAX_LINK_RESERVATIONS_PER_PRICE = 1_000;

/**
 * `GET /pay/:linkId` at the root of the public URL, no authentication: creates a fresh session
 * from the link and answers 303 to its checkout page. An inactive link is 410, an unknown one
 * 404, a link whose visitors hold too many due amounts 429. Limited per IP with the
 * payment-creation budget (10 per minute).
 */
export function publicPaymentLinkRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/pay/:linkId',
    {
      config: { auth: 'none', rateLimit: 'create' },
      schema: {
        tags: ['Payment links (public)'],
        summary: 'Visit a payment link',
        description:
          'Creates a fresh payment session from the link and redirects (303) to its checkout page. 429 with `Retry-After` while the link has 200 unpaid checkouts open, or while unpaid link checkouts still hold 1,000 due amounts at its price and wallet (each holds one until its late-payment window ends).',
        // Any string: a link pasted with a stray character still reaches the handler, whose 404
        // is a page for the customer's browser.
        params: Type.Object({ linkId: Type.String({ minLength: 1, description: 'Payment link identifier (`plink_…`).', 'x-not-found': 'payment link' }) }, { additionalProperties: false }),
        response: { 303: Type.Null({ description: 'Redirect to the new session\'s checkoutUrl (Location header).' }), ...errorResponses(400, 404, 409, 410, 429) },
      },
    },
    async (request, reply) => {
      try {
        return await visit(request.params.linkId!, reply);
      } catch (error) {
        // The link is opened by customers in a browser: they get a page that says what happened,
        // not the API's JSON (which API clients, and anything not naming text/html, still get).
        if (!(error instanceof HttpError) || !wantsPage(request.headers.accept)) throw error;
        for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
        return sendMessagePage(reply, { status: error.status, ...customerMessage(error.status), https: deps.config.publicUrl.startsWith('https:') });
      }
    },
  );

  async function visit(linkId: string, reply: FastifyReply) {
    const session = await deps.store.transaction(async (sql) => {
      const { rows } = await sql.query<LinkRow>(`SELECT ${LINK_COLUMNS} FROM payment_links WHERE id = $1 FOR UPDATE`, [linkId]);
      const link = rows[0];
      if (!link) throw notFound(`payment link ${linkId} not found`);
      if (!link.active) throw new HttpError(410, 'this payment link is no longer active');
      const { rows: open } = await sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1 AND status = 'created' AND expires_at > now()`,
        [link.id],
      );
      if (open[0]!.n >= MAX_OPEN_SESSIONS_PER_LINK) {
        throw new HttpError(429, 'too many checkouts of this payment link are open and unpaid; try again in a few minutes', { headers: { 'retry-after': '60' } });
      }
      const params: CreateSessionParams = {
        merchantId: link.merchant_id,
        livemode: link.livemode,
        amount: formatAmount(BigInt(link.amount), link.decimals),
        currency: link.currency,
        chain: link.chain,
        merchantWallet: link.merchant_wallet ?? undefined,
        metadata: link.metadata,
        webhookUrl: link.webhook_url ?? undefined,
        successUrl: link.success_url ?? undefined,
        expiresIn: link.expires_in,
        paymentLinkId: link.id,
        monitorWindowSeconds: deps.config.monitorWindowSeconds,
        liveChains: liveChains(deps.config),
      };
      await checkLinkReservations(sql, params);
      const created = await createSession(sql, params);
      await sql.query('UPDATE payment_links SET sessions_created = sessions_created + 1 WHERE id = $1', [link.id]);
      return created;
    });
    return reply.header('cache-control', 'no-store').redirect(checkoutUrl(deps.config.publicUrl, session.id), 303);
  }
}

/**
 * Refuses (429) a visit while unpaid link sessions hold {@link MAX_LINK_RESERVATIONS_PER_PRICE}
 * due amounts at the price and wallet the visit's session would take one from. Counted under the
 * due-amount locks that createSession takes next in the same transaction (they are re-entrant),
 * so concurrent visits of any link at that price cannot pass the cap together. `Retry-After`
 * says when the first of those reservations ends.
 */
async function checkLinkReservations(sql: Sql, params: CreateSessionParams): Promise<void> {
  const { amount, decimals, payTo } = await checkSessionTerms(sql, params);
  const tuple = { chain: params.chain, currency: params.currency, payTo, amount, decimals };
  await lockDueAmounts(sql, tuple);
  const { rows } = await sql.query<{ n: number; seconds: number | null }>(
    `SELECT count(*)::int AS n, ceil(extract(epoch FROM min(monitor_until) - now()))::int AS seconds FROM (
       SELECT monitor_until FROM payment_sessions
        WHERE livemode IN (false, true) AND chain = $1 AND currency = $2 AND pay_to = $3
          AND amount_due >= $4::numeric AND amount_due < $4::numeric + $5::numeric AND monitor_until > now()
          AND payment_link_id IS NOT NULL AND amount_received = 0
        ORDER BY monitor_until LIMIT $6) held`,
    [params.chain, params.currency, payTo, amount.toString(), dueOffsetBound(decimals).toString(), MAX_LINK_RESERVATIONS_PER_PRICE],
  );
  if (rows[0]!.n >= MAX_LINK_RESERVATIONS_PER_PRICE) {
    throw new HttpError(
      429,
      `unpaid checkouts from payment links hold ${MAX_LINK_RESERVATIONS_PER_PRICE} due amounts at this price and wallet until their late-payment windows end; try again later (Retry-After) or use another link amount`,
      { headers: { 'retry-after': String(Math.max(1, rows[0]!.seconds ?? 60)) } },
    );
  }
}

/** What a customer reads when a payment link cannot start a checkout (no operator or merchant details). */
function customerMessage(status: number): { title: string; text: string } {
  switch (status) {
    case 404:
      return { title: 'Payment link not found', text: 'This payment link is not valid. Check the link you were given, or return to the merchant.' };
    case 410:
      return { title: 'Payment link no longer active', text: 'The merchant has turned this payment link off. Return to the merchant for a new one.' };
    case 429:
      return { title: 'Too many checkouts open', text: 'Many checkouts of this link are open right now. Please try again later.' };
    default:
      return { title: 'Payment link unavailable', text: 'This payment link cannot take payments right now. Please contact the merchant.' };
  }
}
