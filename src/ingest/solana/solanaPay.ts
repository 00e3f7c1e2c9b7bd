/**
 * The Solana Pay transfer-request URL of a session (spec: solana-pay "Transfer Request"):
 * `solana:<recipient>?amount=<decimal>&spl-token=<mint>&reference=<key>&label=…&message=…`.
 * `amount` is decimal text in token units (e.g. "10.5"), never base units; label and message
 * are percent-encoded.
 */
export function solanaPayUrl(params: { recipient: string; amount: string; splToken: string; reference: string; label?: string; message?: string; memo?: string }): string {
  const query = [`amount=${encodeURIComponent(params.amount)}`, `spl-token=${encodeURIComponent(params.splToken)}`, `reference=${encodeURIComponent(params.reference)}`];
  if (params.label) query.push(`label=${encodeURIComponent(params.label)}`);
  if (params.message) query.push(`message=${encodeURIComponent(params.message)}`);
  if (params.memo) query.push(`memo=${encodeURIComponent(params.memo)}`);
  return `solana:${params.recipient}?${query.join('&')}`;
}
