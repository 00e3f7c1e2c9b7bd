/**
 * The dashboard's one way to write HTML: a tagged template that escapes every interpolated value
 * unless it is already {@link Html}. Pages never build markup by string concatenation, so a
 * merchant name, an email or a metadata value can never become markup.
 *
 * ```ts
 * html`<td>${payment.id}</td><td>${amountCell}</td>`   // payment.id escaped; amountCell is Html
 * ```
 *
 * Values: strings, numbers and bigints are escaped; `null`, `undefined` and `false` render as
 * nothing (so `${cond && html`…`}` works); arrays render each item. Attribute values must be in
 * double quotes in the template (`href="${url}"`): escaping covers `"` but an unquoted attribute
 * could still be split by a space. A URL from outside (a webhook endpoint) must go through
 * {@link safeHref} before it is an `href`.
 */
const HTML_BRAND: unique symbol = Symbol('Html');

/** Markup that is safe to send as is: produced by {@link html} or {@link trustedHtml}. */
export interface Html {
  readonly [HTML_BRAND]: true;
  readonly text: string;
}

export type HtmlValue = string | number | bigint | boolean | null | undefined | Html | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => ESCAPES[character]!);
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && HTML_BRAND in value;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** The template tag: escapes each value, keeps the template's own text. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index++) text += render(values[index]!) + strings[index + 1]!;
  return { [HTML_BRAND]: true, text };
}

/**
 * Markup the code itself wrote and vouches for (an SVG from the qrcode library). Never pass it
 * text that came from a request or the database.
 */
export function trustedHtml(text: string): Html {
  return { [HTML_BRAND]: true, text };
}

/**
 * `url` when it is http(s) or a path on this site, else `#`: a stored `javascript:` URL must not
 * become a link. A path must not start `//` or `/\` (browsers read a backslash as a slash), nor
 * hold tabs or line breaks (URL parsers drop them, so `/\t/host` is `//host`): those name another host.
 */
export function safeHref(url: string): string {
  if (url.startsWith('/')) return /^\/[/\\]/.test(url) || /[\t\n\r]/.test(url) ? '#' : url;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : '#';
  } catch {
    return '#';
  }
}
