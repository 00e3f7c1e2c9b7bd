import type { Sql } from '../store/index.ts';
import { badRequest, notFound } from '../internal/errors.ts';

/**
 * The merchant's brand (issue 26): the display name (`merchants.name`), an accent colour, a
 * support email or URL, and whether a logo is stored (its sha256, which versions its URL). Shown
 * on the checkout page, the receipt and the dashboard. Every change is audited by its caller
 * (`merchant.brand_changed`, `merchant.logo_set`, `merchant.logo_removed`).
 */
export interface MerchantBrand {
  name: string;
  /** `#rrggbb`, lower case, or null for the gateway's own colour. */
  accentColor: string | null;
  supportEmail: string | null;
  /** https (an http URL set in test mode is shown on sandbox pages only: {@link supportUrlFor}). */
  supportUrl: string | null;
  /** Hex sha256 of the stored logo, or null when there is none. */
  logoSha256: string | null;
}

/** A change of brand: an omitted field keeps its value, null clears it (the name cannot be cleared). */
export interface BrandChange {
  name?: string | undefined;
  accentColor?: string | null | undefined;
  supportEmail?: string | null | undefined;
  supportUrl?: string | null | undefined;
}

/** The display name's bounds: the column's CHECK (1..200). */
export const MAX_MERCHANT_NAME = 200;

const HEX_COLOR = /^#[0-9a-fA-F]{6}$/;
// Deliberately plain: one @, no spaces, angle brackets or quotes, a dot in the domain. It is shown as text and a mailto: link.
const EMAIL = /^[^\s@<>"'(),;:\\[\]]+@[^\s@<>"'(),;:\\[\]]+\.[^\s@<>"'(),;:\\[\].]{2,}$/;

/** A display name: trimmed, 1..200 characters, no control characters. */
export function checkMerchantName(text: string): string {
  const name = text.trim();
  if (name.length === 0) throw badRequest('name must not be empty');
  if (name.length > MAX_MERCHANT_NAME) throw badRequest(`name must be at most ${MAX_MERCHANT_NAME} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f]/.test(name)) throw badRequest('name must not contain control characters');
  return name;
}

/** An accent colour `#rrggbb` (any case), returned in lower case. */
export function checkAccentColor(text: string): string {
  if (!HEX_COLOR.test(text)) throw badRequest('accentColor must be a colour written #rrggbb (six hex digits), e.g. "#1a73e8"');
  return text.toLowerCase();
}

/** A support email: one address, at most 254 characters. */
export function checkSupportEmail(text: string): string {
  const email = text.trim();
  if (email.length > 254 || !EMAIL.test(email)) throw badRequest('supportEmail must be an email address such as "help@shop.example"');
  return email;
}

/**
 * A support URL: absolute, https, at most 2048 characters, no credentials. `http:` is accepted
 * only for a change made in test mode (a developer's local shop); live checkouts never show it.
 */
export function checkSupportUrl(text: string, params: { livemode: boolean }): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw badRequest('supportUrl must be an absolute https URL');
  }
  const allowed = params.livemode ? ['https:'] : ['https:', 'http:'];
  if (!allowed.includes(url.protocol)) throw badRequest(params.livemode ? 'supportUrl must be an https URL' : 'supportUrl must be an http or https URL');
  if (url.username || url.password) throw badRequest('supportUrl must not contain a user name or password');
  if (url.href.length > 2048) throw badRequest('supportUrl must be at most 2048 characters');
  return url.href;
}

/** The support URL a page of `livemode` may link to: only https on live pages. */
export function supportUrlFor(brand: Pick<MerchantBrand, 'supportUrl'>, livemode: boolean): string | null {
  if (!brand.supportUrl) return null;
  return !livemode || brand.supportUrl.startsWith('https:') ? brand.supportUrl : null;
}

/**
 * Text colour for a background of `accent`: black or white, whichever contrasts more (WCAG 2
 * relative luminance). The better of the two is never below 4.58:1 (the worst case is a mid
 * grey), so text on the merchant's colour always meets WCAG AA for normal text.
 */
export function textColorOn(accent: string): '#000000' | '#ffffff' {
  const channel = (hex: string) => {
    const c = Number.parseInt(hex, 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * channel(accent.slice(1, 3)) + 0.7152 * channel(accent.slice(3, 5)) + 0.0722 * channel(accent.slice(5, 7));
  // Contrast with black is (l + 0.05) / 0.05, with white 1.05 / (l + 0.05): black wins above l ≈ 0.179.
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? '#000000' : '#ffffff';
}

/** Reads a merchant's brand; undefined when the merchant does not exist. */
export async function getMerchantBrand(sql: Sql, merchantId: string): Promise<MerchantBrand | undefined> {
  const { rows } = await sql.query<MerchantBrand>(
    `SELECT m.name, m.accent_color AS "accentColor", m.support_email AS "supportEmail", m.support_url AS "supportUrl", l.sha256 AS "logoSha256"
       FROM merchants m LEFT JOIN merchant_logos l ON l.merchant_id = m.id WHERE m.id = $1`,
    [merchantId],
  );
  return rows[0];
}

/**
 * Checks and applies a change of brand, on `sql` (the caller's transaction, which records the
 * audit entry). Returns what changed (field: new value) for the audit entry, and the brand after.
 * @throws {InvalidRequestError} 400 for a bad value; {NotFoundError} 404 for an unknown merchant.
 */
export async function setMerchantBrand(
  sql: Sql,
  merchantId: string,
  change: BrandChange,
  params: { livemode: boolean },
): Promise<{ brand: MerchantBrand; changed: Record<string, string | null> }> {
  const checked: Record<string, string | null> = {};
  if (change.name !== undefined) checked.name = checkMerchantName(change.name);
  if (change.accentColor !== undefined) checked.accent_color = change.accentColor === null ? null : checkAccentColor(change.accentColor);
  if (change.supportEmail !== undefined) checked.support_email = change.supportEmail === null ? null : checkSupportEmail(change.supportEmail);
  if (change.supportUrl !== undefined) checked.support_url = change.supportUrl === null ? null : checkSupportUrl(change.supportUrl, params);
  const before = await getMerchantBrand(sql, merchantId);
  if (!before) throw notFound(`merchant ${merchantId} not found`);
  const columns = Object.keys(checked);
  if (columns.length > 0) {
    await sql.query(`UPDATE merchants SET ${columns.map((column, i) => `${column} = $${i + 2}`).join(', ')} WHERE id = $1`, [
      merchantId,
      ...columns.map((column) => checked[column]),
    ]);
  }
  const brand = (await getMerchantBrand(sql, merchantId))!;
  const fieldOf: Record<string, keyof MerchantBrand> = { name: 'name', accent_color: 'accentColor', support_email: 'supportEmail', support_url: 'supportUrl' };
  const changed: Record<string, string | null> = {};
  for (const column of columns) {
    const field = fieldOf[column]!;
    if (before[field] !== brand[field]) changed[field] = brand[field];
  }
  return { brand, changed };
}
