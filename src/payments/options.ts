import type { Sql } from '../store/index.ts';
import { CHAIN_NAMES, type ChainName } from '../internal/config.ts';
import { CURRENCIES, loadChains, type Currency } from '../internal/chains.ts';
import { AmountError, parseAmount } from '../internal/money.ts';
import { badRequest, ConflictError, InvalidRequestError } from '../internal/errors.ts';
import { checkSessionTerms, type CheckedTerms, type SessionTerms } from './terms.ts';
import { checkPurchase, type PurchaseInput } from './purchase.ts';

/**
 * The customer's choice of chain and token (issue 26): a session or a link may accept several
 * (chain, currency) pairs, its `paymentOptions`; the customer or an agent picks one, and only then
 * is anything reserved (choices.ts). Single-pair bodies (`chain` + `currency`) are unchanged.
 */

/** One accepted (chain, currency) pair. */
export interface PaymentOption {
  chain: ChainName;
  currency: Currency;
}

/** At most 12 options: every pair of the six chains' two stablecoins. */
export const MAX_PAYMENT_OPTIONS = 12;

/** Whether two pairs are the same. */
export function samePair(a: PaymentOption, b: PaymentOption): boolean {
  return a.chain === b.chain && a.currency === b.currency;
}

/** `USDC on base`: how errors and pages name a pair. */
export function pairName(pair: PaymentOption): string {
  return `${pair.currency} on ${pair.chain}`;
}

/**
 * The token amount a chosen pair costs, as decimal text in token units: the one place that says
 * it. Today the stablecoin `amount` itself (both tokens are USD stablecoins: "that many units of
 * whichever token is chosen"); a fiat `price` is converted here (src/pricing/, at merge).
 */
export function amountForChoice(terms: { amount: string }, _pair: PaymentOption): string {
  return terms.amount;
}

/** What a creation with options carries besides the pairs: a session's terms without its pair. */
export type OptionTerms = Omit<SessionTerms, 'chain' | 'currency'> & PurchaseInput;

/**
 * Checks the pairs a creation asks for, or picks the default, before anything is written:
 * `requested` given (1..12, no duplicates), each pair gets every check a single-pair session's
 * terms get ({@link checkSessionTerms}: offered on the chain, watched in live mode, a receiving
 * wallet, the merchant's token rules) and the purchase check, and the first refusal is the
 * answer (400 or 409 naming the pair). `requested` absent: every pair the merchant can receive
 * in this mode, in the chains' and currencies' canonical order; a 400 when there is none.
 * `merchantWallet` is one chain's address, so it cannot go with several pairs (400).
 * @returns the accepted pairs, each with its checked terms.
 */
export async function checkPaymentOptions(
  sql: Sql,
  params: OptionTerms & { paymentOptions?: readonly PaymentOption[] | undefined },
): Promise<{ pair: PaymentOption; terms: CheckedTerms }[]> {
  if (params.merchantWallet !== undefined) {
    throw badRequest('merchantWallet cannot be combined with paymentOptions: each chain is paid to its own default wallet');
  }
  // The amount first, at the fewest decimals a stablecoin has (6): "that many units of whichever
  // token is chosen" must be payable in every one of them.
  checkAmountText(params.amount);
  if (params.paymentOptions !== undefined) {
    const requested = params.paymentOptions;
    if (requested.length < 1 || requested.length > MAX_PAYMENT_OPTIONS) {
      throw badRequest(`paymentOptions must list 1 to ${MAX_PAYMENT_OPTIONS} (chain, currency) pairs`);
    }
    requested.forEach((pair, i) => {
      if (requested.findIndex((other) => samePair(other, pair)) !== i) throw badRequest(`paymentOptions lists ${pairName(pair)} twice`);
    });
    const checked: { pair: PaymentOption; terms: CheckedTerms }[] = [];
    for (const pair of requested) {
      try {
        checked.push({ pair: { chain: pair.chain, currency: pair.currency }, terms: await checkPair(sql, params, pair) });
      } catch (error) {
        if (error instanceof InvalidRequestError) throw badRequest(`paymentOptions: ${pairName(pair)}: ${error.shortMessage}`);
        if (error instanceof ConflictError) throw new ConflictError(`paymentOptions: ${pairName(pair)}: ${error.shortMessage}`);
        throw error;
      }
    }
    return checked;
  }
  const chains = loadChains();
  const accepted: { pair: PaymentOption; terms: CheckedTerms }[] = [];
  let firstRefusal: unknown;
  for (const chain of CHAIN_NAMES) {
    if (!chains[chain]) continue;
    for (const currency of CURRENCIES) {
      try {
        accepted.push({ pair: { chain, currency }, terms: await checkPair(sql, params, { chain, currency }) });
      } catch (error) {
        if (!(error instanceof InvalidRequestError || error instanceof ConflictError)) throw error;
        firstRefusal ??= error;
      }
    }
  }
  if (accepted.length === 0) {
    throw badRequest(
      `this merchant can receive no (chain, currency) pair in ${params.livemode ? 'live' : 'test'} mode with these terms (the first refusal: ${(firstRefusal as InvalidRequestError | undefined)?.shortMessage ?? 'none'}); add a wallet or give chain and currency`,
    );
  }
  return accepted;
}

/** One pair's terms and purchase, checked as a single-pair session's would be. */
async function checkPair(sql: Sql, params: OptionTerms, pair: PaymentOption): Promise<CheckedTerms> {
  const terms = await checkSessionTerms(sql, { ...params, chain: pair.chain, currency: pair.currency, amount: amountForChoice(params, pair) });
  checkPurchase(params, { amount: terms.amount, decimals: terms.decimals, currency: pair.currency });
  return terms;
}

/** An amount with more than 6 decimals cannot be paid in a 6-decimal token: refused for every option at once. */
function checkAmountText(amount: string): void {
  try {
    parseAmount(amount, 6);
  } catch (error) {
    if (error instanceof AmountError) throw badRequest(`${error.message} (with several payment options the amount must be payable in 6-decimal tokens)`);
    throw error;
  }
}

/** The options a stored row lists, or its own pair when it has none (a single-pair session or link). */
export function optionsOf(row: { paymentOptions: PaymentOption[] | null; chain: ChainName; currency: Currency }): PaymentOption[] {
  return row.paymentOptions ?? [{ chain: row.chain, currency: row.currency }];
}
