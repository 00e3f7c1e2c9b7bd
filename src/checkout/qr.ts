import QRCode from 'qrcode';

/**
 * A QR code of `text` as an inline SVG (made on the server: no script, no external image).
 * Error correction M (15%) survives a scratched phone screen while keeping a 150-character
 * EIP-681 URI at a size phones scan from a laptop screen; the 4-module margin is the quiet
 * zone the QR standard asks for.
 */
export async function qrSvg(text: string, params: { label: string }): Promise<string> {
  const svg = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4, color: { dark: '#000000', light: '#ffffff' } });
  return svg.replace('<svg ', `<svg role="img" aria-label="${escapeHtml(params.label)}" class="qr-svg" `);
}

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
