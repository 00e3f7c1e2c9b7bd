import { AmountError, formatAmount, parseAmount } from '../internal/money.ts';
import { badRequest } from '../internal/errors.ts';

/**
 * What is being bought (issue 26): a description, optional line items and a cancel URL, on a
 * session or a payment link (whose visits copy them into each session). Shown on the checkout
 * page and the receipt, carried in the API views and in payment events.
 *
 * Line items are not informational: their total (quantity × unit amount, summed) must equal the
 * session's `amount` exactly, so a receipt never lists items that add up to something else than
 * what was paid. Taxes, shipping or a discount are items of their own (a discount cannot be
 * negative: lower the other items instead).
 */

/** At most 50 items: a long order is summarised, not itemised to the last screw (Stripe allows 100). */
export const MAX_LINE_ITEMS = 50;
/** Bounds of one item; the description's is the column's CHECK. */
export const LINE_ITEM_LIMITS = { nameLength: 200, maxQuantity: 10_000, descriptionLength: 1000 } as const;

/** One line item as stored: the unit amount in base units of the session's token. */
export interface StoredLineItem {
  name: string;
  quantity: number;
  /** Base units, integer text (JSON cannot hold a bigint). */
  unitAmount: string;
}

/** One line item on the wire: amounts as decimal text. */
export interface LineItemInput {
  name: string;
  quantity: number;
  unitAmount: string;
}

/** What a creation carries about the purchase, as it came over the wire. */
export interface PurchaseInput {
  description?: string | undefined;
  lineItems?: LineItemInput[] | undefined;
  cancelUrl?: string | undefined;
}

/** The purchase as stored on a session or link. */
export interface Purchase {
  description: string | null;
  lineItems: StoredLineItem[] | null;
  cancelUrl: string | null;
}

/**
 * Checks a purchase against the amount it describes (base units at `decimals`): each unit amount
 * is decimal text with no more decimals than the token has, and the items' total is the amount.
 * The schemas bound sizes; this repeats the bounds so every caller (dashboard, CLI) gets them.
 * @throws {InvalidRequestError} 400 naming the item and what is wrong.
 */
export function checkPurchase(input: PurchaseInput, params: { amount: bigint; decimals: number; currency: string }): Purchase {
  const description = input.description?.trim() || null;
  if (description && description.length > LINE_ITEM_LIMITS.descriptionLength) {
    throw badRequest(`description must be at most ${LINE_ITEM_LIMITS.descriptionLength} characters`);
  }
  let lineItems: StoredLineItem[] | null = null;
  if (input.lineItems && input.lineItems.length > 0) {
    if (input.lineItems.length > MAX_LINE_ITEMS) throw badRequest(`lineItems must have at most ${MAX_LINE_ITEMS} items`);
    let total = 0n;
    lineItems = input.lineItems.map((item, i) => {
      const where = `lineItems[${i}]`;
      const name = item.name.trim();
      if (name.length === 0 || name.length > LINE_ITEM_LIMITS.nameLength)
        throw badRequest(`${where}.name must be 1 to ${LINE_ITEM_LIMITS.nameLength} characters`);
      if (!Number.isInteger(item.quantity) || item.quantity < 1 || item.quantity > LINE_ITEM_LIMITS.maxQuantity) {
        throw badRequest(`${where}.quantity must be a whole number from 1 to ${LINE_ITEM_LIMITS.maxQuantity}`);
      }
      let unit: bigint;
      try {
        unit = parseAmount(item.unitAmount, params.decimals);
      } catch (error) {
        if (error instanceof AmountError) throw badRequest(error.message.replace(/^amount/, `${where}.unitAmount`));
        throw error;
      }
      if (unit < 0n) throw badRequest(`${where}.unitAmount must not be negative`);
      total += unit * BigInt(item.quantity);
      return { name, quantity: item.quantity, unitAmount: unit.toString() };
    });
    if (total !== params.amount) {
      throw badRequest(
        `lineItems add up to ${formatAmount(total, params.decimals)} ${params.currency} but amount is ${formatAmount(params.amount, params.decimals)}: the items' total (quantity × unitAmount) must equal amount`,
      );
    }
  }
  return { description, lineItems, cancelUrl: input.cancelUrl ?? null };
}

/** Line items as the API, events and pages show them: decimal text, with each line's total. */
export function lineItemsView(
  items: StoredLineItem[] | null,
  decimals: number,
): { name: string; quantity: number; unitAmount: string; amount: string }[] | null {
  if (!items) return null;
  return items.map((item) => ({
    name: item.name,
    quantity: item.quantity,
    unitAmount: formatAmount(BigInt(item.unitAmount), decimals),
    amount: formatAmount(BigInt(item.unitAmount) * BigInt(item.quantity), decimals),
  }));
}
