import { prepared, type Sql } from '../store/index.ts';
import { newId } from '../internal/crypto.ts';
import { getBase58Decoder } from '@solana/kit';
import { randomBytes } from 'node:crypto';
import { registerInlineWallet } from '../accounts/walletRules.ts';
import { toSession, type Session } from './session.ts';
import { checkLocalTerms, checkSessionTerms, feeFor, merchantTerms, requiredConfirmations, resolvePayTo, tokenLists, type MerchantChecks } from './terms.ts';
import { dueLockKeys, dueOffsetBound, lockDueAmounts, noDueAmountLeft } from './dueAmounts.ts';
import * as sessionSql from './sessionSql.ts';
import { depositAddressFor } from './attribution.ts';
import { checkPurchase, type Purchase } from './purchase.ts';
import { badRequest } from '../internal/errors.ts';
import type { CreateSessionParams } from './sessions.ts';

/**
 * The creation's writes, prepared: planned once per connection instead of at every request
 * (planning was most of their Postgres time; their generic plans are index lookups:
 * bench/apiExplain.ts).
 */
const CREATE_AMOUNT_SESSION = prepared(sessionSql.createAmountSession());
const INSERT_SESSION = prepared(sessionSql.insertSession());
const INSERT_ADDRESS_SESSION = prepared(sessionSql.insertAddressSession());

/** The fields of {@link CREATE_AMOUNT_SESSION}'s answer that are not the session's. */
interface CreationChecks {
  svc_accept_bridged_tokens: boolean | null;
  svc_default_attribution: MerchantChecks['default_attribution'];
  svc_verified_elsewhere: boolean;
  svc_wallet_kept: boolean;
}

/** A fresh Solana Pay reference: a random 32-byte public key in base58. */
export function newSolanaReference(): string {
  return getBase58Decoder().decode(randomBytes(32));
}

/**
 * Inserts the session `params` asks for, on `sql` (a transaction), and returns it. The common
 * case, a session in `amount` mode on a known wallet, is one statement after the terms checked
 * locally ({@link sessionSql.createAmountSession}); a new inline wallet, `address` mode and every
 * refusal then go the way they went before, one step each, and refuse in the same order
 * (terms, merchant checks, purchase details, wallet cap, due amounts).
 */
export async function insertSession(sql: Sql, params: CreateSessionParams): Promise<Session> {
  // Line items are written in token units and must add up to `amount`: with a fiat price the
  // amount is only known after conversion, so items would be a guess (docs/checkout.md).
  if (params.price && params.lineItems && params.lineItems.length > 0) throw badRequest('lineItems cannot be combined with price: give description instead');
  const local = checkLocalTerms(params);
  const { chain, decimals, amount, merchantWallet } = local;
  let purchase: Purchase;
  try {
    purchase = checkPurchase(params, { amount, decimals, currency: params.currency });
  } catch (error) {
    // The merchant's checks refuse before the purchase details, as they always have.
    await checkSessionTerms(sql, params);
    throw error;
  }
  const payTo = await resolvePayTo(sql, { merchantId: params.merchantId, chain: params.chain, merchantWallet, livemode: params.livemode });
  // A chosen session keeps the expiry it had before the choice.
  const expiresIn = params.chosen?.secondsLeft ?? local.expiresIn;
  const paymentOptions = params.chosen ? JSON.stringify(params.chosen.paymentOptions) : null;
  // The ingesters watch the `wallets` table: a live session paying to a wallet given inline must
  // put that wallet there (unverified, within a cap per merchant), or its payment would never be seen.
  const inline = params.livemode && merchantWallet !== undefined;
  const tuple = { chain: params.chain, currency: params.currency, payTo };
  const tokens = tokenLists(chain, params.currency);
  // One parameter list for both modes' INSERTs (sessionSql.ts): `amount` mode has the due-offset
  // bound after the amount and a Solana Pay reference (Solana) after the pay-to; `address` mode
  // has no bound and its deposit address in the reference's place.
  const sessionValues = (id: string, tokenList: string[], mode: { depositAddress: string } | 'amount') => [
    id,
    params.merchantId,
    params.livemode,
    params.chain,
    params.currency,
    decimals,
    amount.toString(),
    ...(mode === 'amount' ? [dueOffsetBound(decimals).toString()] : []),
    feeFor(amount, params.feeBps).toString(),
    tokenList,
    payTo,
    mode !== 'amount' ? mode.depositAddress : params.chain === 'solana' ? newSolanaReference() : null,
    requiredConfirmations(chain),
    params.metadata ?? {},
    params.webhookUrl ?? null,
    params.successUrl ?? null,
    params.paymentLinkId ?? null,
    expiresIn,
    params.monitorWindowSeconds,
    purchase.description,
    purchase.lineItems && JSON.stringify(purchase.lineItems),
    purchase.cancelUrl,
    paymentOptions,
  ];
  const { rows } = await sql.query<CreationChecks & Record<string, unknown>>(CREATE_AMOUNT_SESSION, [
    ...sessionValues(params.chosen?.id ?? newId('ses'), tokens.native, 'amount'),
    inline,
    params.attribution ?? null,
    tokens.withBridged,
    ...dueLockKeys({ ...tuple, bucket: amount / dueOffsetBound(decimals) }),
  ]);
  const { svc_accept_bridged_tokens, svc_default_attribution, svc_verified_elsewhere, svc_wallet_kept, ...created } = rows[0]!;
  const terms = merchantTerms(params, chain, payTo, {
    accept_bridged_tokens: svc_accept_bridged_tokens,
    default_attribution: svc_default_attribution,
    verified_elsewhere: svc_verified_elsewhere,
  });
  if (created.id != null) return toSession(created);
  // The statement tried to insert (a known or no inline wallet, `amount` mode, checks passed): no due amount was left.
  if (terms.attribution === 'amount' && (!inline || svc_wallet_kept)) throw noDueAmountLeft({ ...tuple, amount });
  if (inline) await registerInlineWallet(sql, { merchantId: params.merchantId, chain: params.chain, address: payTo });

  if (terms.attribution === 'address') {
    // Its own address tells its payments apart: the plain amount, no due-amount lock or pick.
    const id = params.chosen?.id ?? newId('ses');
    const { rows: inserted } = await sql.query(
      INSERT_ADDRESS_SESSION,
      sessionValues(id, terms.tokens, { depositAddress: depositAddressFor({ payTo, sessionId: id }) }),
    );
    return toSession(inserted[0]!);
  }
  // A new inline wallet, registered just above: locked after it, then the INSERT picks the due amount.
  await lockDueAmounts(sql, { ...tuple, amount, decimals });
  const { rows: inserted } = await sql.query(INSERT_SESSION, sessionValues(params.chosen?.id ?? newId('ses'), terms.tokens, 'amount'));
  if (!inserted[0]) throw noDueAmountLeft({ ...tuple, amount });
  return toSession(inserted[0]);
}
