import type { Sql } from '../store/index.ts';
import { ConflictError, GoneError, InvalidRequestError, NotFoundError } from '../internal/errors.ts';
import { chooseOption, type ChoiceConfig } from '../payments/choices.ts';
import { pairName } from '../payments/options.ts';
import { payerAddress, type Session } from '../payments/session.ts';
import { REASONS, type Refusal } from './authorization.ts';
import type { SettleOutcome } from './inFlight.ts';
import type { ChoiceOffer } from './choiceOffers.ts';

/**
 * Settling a payload of a waiting session fixes the choice of its option in the transaction that
 * inserts the settlement row, before anything is sent; the settlement then goes on exactly as a
 * single-pair session's (settle.ts). A payload for another option than the one chosen meanwhile,
 * or whose amount or recipient the choice no longer gives, rolls that transaction back and is
 * refused with nothing sent.
 */

/** The option a payload pays and how to settle it: `settle` runs `prepare` in the settlement row's transaction. */
export interface ChosenPayment {
  chosen: ChoiceOffer;
  settle(prepare: (sql: Sql) => Promise<string>): Promise<SettleOutcome>;
}

/** The refusal of a payload that pays none of the options listed (`reason`: wrong network, or wrong asset on a listed one). */
export function noOptionRefusal(sessionId: string, offers: ChoiceOffer[], reason: string): { refusal: Refusal } {
  return {
    refusal: {
      reason,
      message: `this payment is for no option of session ${sessionId} that x402 can pay here (${offers.map(({ pair }) => pairName(pair)).join(', ') || 'none'})`,
    },
  };
}

/** Refuses a payload inside the settlement's transaction: thrown there so the choice and the row roll back. */
export class ChoiceRefused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message);
  }
}

/**
 * In the settlement row's transaction: fixes the choice of the payload's option (or finds it
 * made), and checks that the session it makes asks exactly what was signed. Throws
 * {@link ChoiceRefused} otherwise, which rolls the choice back.
 */
export async function fixChoice(sql: Sql, config: ChoiceConfig, id: string, chosen: ChoiceOffer): Promise<string> {
  let session: Session;
  try {
    ({ session } = await chooseOption(sql, { id, pair: chosen.pair, config, ...(chosen.priced ? { priced: chosen.priced } : {}) }));
  } catch (error) {
    if (error instanceof ConflictError || error instanceof InvalidRequestError || error instanceof GoneError || error instanceof NotFoundError)
      throw new ChoiceRefused({ reason: REASONS.notPayable, message: error.shortMessage });
    throw error;
  }
  const signed = chosen.requirements;
  if (session.status !== 'created' || session.amountReceived > 0n || session.amountPending > 0n)
    throw new ChoiceRefused({ reason: REASONS.notPayable, message: `session ${id} is ${session.status} and asks for nothing more` });
  if (payerAddress(session).toLowerCase() !== signed.payTo.toLowerCase())
    throw new ChoiceRefused({ reason: REASONS.recipient, message: `session ${id} is now paid at ${payerAddress(session)}; fetch the resource again` });
  if (session.amountDue !== BigInt(signed.amount))
    throw new ChoiceRefused({
      reason: REASONS.value,
      message: `session ${id} asks ${session.amountDue} base units of ${pairName(chosen.pair)} now (another session took ${signed.amount} meanwhile); fetch the resource again`,
    });
  return session.id;
}
