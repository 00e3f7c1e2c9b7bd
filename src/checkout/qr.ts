import QRCode from 'qrcode';

/**
 * A QR code of `text` as an inline SVG (made on the server: no script, no external image).
 * Error correction M (15%) survives a scratched phone screen while keeping a 150-character
 * EIP-681 URI at a size phones scan from a laptop screen; the 4-module margin is the quiet
 * zone the QR standard asks for.
 */
export async function qrSvg(text: string, params: { label: string }): Promise<string> {
  let svg = cache.get(text);
  if (svg === undefined) {
    svg = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4, color: { dark: '#000000', light: '#ffffff' } });
    cache.set(text, svg);
    if (cache.size > QR_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  return svg.replace('<svg ', `<svg role="img" aria-label="${escapeHtml(params.label)}" class="qr-svg" `);
}

/**
 * Encoding a QR code costs about 5 ms of CPU (bench/checkout.ts), and a page fetches the same
 * one on every load and reload. 1,000 recent codes (about 10 MB of SVG text) cover every open
 * session of a busy shop; the oldest is dropped first.
 */
const QR_CACHE_SIZE = 1000;
const cache = new Map<string, string>();

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
