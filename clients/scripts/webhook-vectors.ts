/**
 * Writes `clients/webhook-vectors.json`: deliveries signed by the daemon's own signer
 * (src/delivery/sign.ts `signedHeaders`, the code that signs real deliveries) with fixed
 * secrets, times and nonces, each with the answer every verifier must give. The daemon's
 * reference `verifyWebhook` and each client library's verifier are tested against this file.
 *
 *   npx tsx clients/scripts/webhook-vectors.ts
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signedHeaders } from '../../src/delivery/sign.ts';
import { CLIENTS_DIR, writeIfChanged } from './files.ts';

export const VECTORS_PATH = path.join(CLIENTS_DIR, 'webhook-vectors.json');

/** What a verifier must answer: the event's id, or the refusal's reason. */
export type Expectation = { ok: true; eventId: string } | { ok: false; reason: string };

export interface WebhookVector {
  name: string;
  description: string;
  /** The receiver's secret. */
  secret: string;
  /** The receiver's clock, unix seconds. */
  now: number;
  /** The mode the receiver requires; absent: any. */
  livemode?: boolean;
  /** As received; names in mixed case on purpose (header names are case-insensitive). */
  headers: Record<string, string>;
  /** The raw body: its UTF-8 bytes are what was signed. */
  body: string;
  expect: Expectation;
}

const NOW = 1_767_225_600; // 2026-01-01T00:00:00Z
const CURRENT = 'whsec_vectors_current_2f7c9a1e5b3d8f60';
const PREVIOUS = 'whsec_vectors_previous_9d04e6b2a8c1f735';
const OTHER = 'whsec_vectors_unrelated_5a6b7c8d9e0f1a2b';

function envelope(livemode: boolean): string {
  return JSON.stringify({
    id: livemode ? 'evt_vectorsLive00000000001' : 'evt_vectorsSandbox000000001',
    event: 'payment.confirmed',
    data: {
      id: 'ses_vectors0000000000001',
      amount: '25',
      currency: 'USDC',
      chain: 'polygon',
      status: 'confirmed',
      txHash: '0x5a4db0c5000000000000000000000000000000000000000000000000000000aa',
      confirmedAt: '2025-12-31T23:59:58.000Z',
      // Non-ASCII on purpose: the signature covers the UTF-8 bytes, never a re-encoding.
      metadata: { order: 'Bestellung №42 – café ☕' },
      livemode,
    },
    timestamp: '2025-12-31T23:59:58.412Z',
    livemode,
  });
}

/** Headers as the daemon sends them, names in the README's capitalisation. */
function deliver(body: string, secrets: string[], signedAt: number): Record<string, string> {
  const sent = signedHeaders({
    secrets,
    body,
    eventId: /"id":"(evt_\w+)"/.exec(body)?.[1] ?? 'evt_vectorsNotJson0000001',
    eventType: 'payment.confirmed',
    deliveryId: 'whd_vectors000000000001',
    now: new Date(signedAt * 1000),
    nonce: 'vectorsNonce0000000000001',
  });
  const capitalised = (name: string) => name.replace(/(^|-)([a-z])/g, (_m, dash: string, letter: string) => `${dash}${letter.toUpperCase()}`);
  return Object.fromEntries(Object.entries(sent).map(([name, value]) => [capitalised(name), value]));
}

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const { [name]: _removed, ...rest } = headers;
  return rest;
}

/** Every vector, built afresh (deterministic: fixed secrets, clock and nonce). */
export function buildWebhookVectors(): { about: string; vectors: WebhookVector[] } {
  const sandbox = envelope(false);
  const live = envelope(true);
  const sandboxId = (JSON.parse(sandbox) as { id: string }).id;
  const liveId = (JSON.parse(live) as { id: string }).id;
  const signed = deliver(sandbox, [CURRENT], NOW);
  const rotated = deliver(sandbox, [CURRENT, PREVIOUS], NOW);
  const [newSignature, oldSignature] = rotated['X-Service-Signature']!.split(',');
  const accept = (eventId = sandboxId): Expectation => ({ ok: true, eventId });
  const refuse = (reason: string): Expectation => ({ ok: false, reason });
  const vector = (name: string, description: string, parts: Partial<WebhookVector> & { expect: Expectation }): WebhookVector => ({
    name,
    description,
    secret: CURRENT,
    now: NOW,
    headers: signed,
    body: sandbox,
    ...parts,
  });

  const vectors: WebhookVector[] = [
    vector('valid', 'A sandbox delivery as the daemon signs it, verified with its secret.', { expect: accept() }),
    vector('valid_lower_case_headers', 'Header names as Node delivers them: names are case-insensitive.', {
      headers: Object.fromEntries(Object.entries(signed).map(([name, value]) => [name.toLowerCase(), value])),
      expect: accept(),
    }),
    vector('tampered_body', 'One character of the body changed after signing.', { body: sandbox.replace('"amount":"25"', '"amount":"26"'), expect: refuse('signature_mismatch') }),
    vector('reserialised_body', 'The same JSON re-serialised with other spacing: only the raw bytes verify.', {
      body: JSON.stringify(JSON.parse(sandbox), null, 1),
      expect: refuse('signature_mismatch'),
    }),
    vector('wrong_secret', 'Verified with a secret that did not sign it.', { secret: OTHER, expect: refuse('signature_mismatch') }),
    vector('old_timestamp', 'Signed 301 s before the receiver\'s clock: outside the 300 s tolerance.', { headers: deliver(sandbox, [CURRENT], NOW - 301), expect: refuse('timestamp_out_of_tolerance') }),
    vector('future_timestamp', 'Signed 301 s after the receiver\'s clock.', { headers: deliver(sandbox, [CURRENT], NOW + 301), expect: refuse('timestamp_out_of_tolerance') }),
    vector('timestamp_at_tolerance', 'Signed exactly 300 s before: still inside the tolerance.', { headers: deliver(sandbox, [CURRENT], NOW - 300), expect: accept() }),
    vector('missing_signature', 'No X-Service-Signature header.', { headers: without(signed, 'X-Service-Signature'), expect: refuse('missing_header') }),
    vector('missing_timestamp', 'No X-Service-Timestamp header.', { headers: without(signed, 'X-Service-Timestamp'), expect: refuse('missing_header') }),
    vector('missing_nonce', 'No X-Service-Nonce header.', { headers: without(signed, 'X-Service-Nonce'), expect: refuse('missing_header') }),
    vector('empty_signature', 'An empty X-Service-Signature counts as missing.', { headers: { ...signed, 'X-Service-Signature': '' }, expect: refuse('missing_header') }),
    vector('malformed_timestamp', 'A timestamp that is not unix seconds.', { headers: { ...signed, 'X-Service-Timestamp': '2026-01-01T00:00:00Z' }, expect: refuse('malformed_header') }),
    vector('malformed_signature_scheme', 'A signature without the sha256= scheme.', {
      headers: { ...signed, 'X-Service-Signature': signed['X-Service-Signature']!.slice('sha256='.length) },
      expect: refuse('malformed_header'),
    }),
    vector('malformed_signature_upper_case', 'Upper-case hex is not the form the gateway sends.', {
      headers: { ...signed, 'X-Service-Signature': `sha256=${signed['X-Service-Signature']!.slice('sha256='.length).toUpperCase()}` },
      expect: refuse('malformed_header'),
    }),
    vector('too_many_signatures', 'Nine signatures: more than the eight a verifier reads.', {
      headers: { ...signed, 'X-Service-Signature': Array(9).fill(signed['X-Service-Signature']).join(',') },
      expect: refuse('malformed_header'),
    }),
    vector('rotated_old_secret', 'During a rotation the header carries two signatures, newest first; a receiver still on the previous secret verifies.', {
      secret: PREVIOUS,
      headers: rotated,
      expect: accept(),
    }),
    vector('rotated_new_secret', 'The same two-signature delivery, verified with the new secret.', { headers: rotated, expect: accept() }),
    vector('rotated_other_secret', 'A two-signature delivery matches neither of an unrelated secret.', { secret: OTHER, headers: rotated, expect: refuse('signature_mismatch') }),
    vector('rotated_with_spaces', 'Optional spaces after the comma are allowed.', {
      secret: PREVIOUS,
      headers: { ...rotated, 'X-Service-Signature': `${newSignature}, ${oldSignature}` },
      expect: accept(),
    }),
    vector('wrong_mode', 'A sandbox event at a receiver that requires live events: refused although the signature is good.', { livemode: true, expect: refuse('livemode_mismatch') }),
    vector('sandbox_mode', 'A sandbox event at a receiver that requires sandbox events.', { livemode: false, expect: accept() }),
    vector('live_mode', 'A live event at a receiver that requires live events.', { body: live, headers: deliver(live, [CURRENT], NOW), livemode: true, expect: accept(liveId) }),
    vector('live_event_sandbox_receiver', 'A live event at a receiver that requires sandbox events.', { body: live, headers: deliver(live, [CURRENT], NOW), livemode: false, expect: refuse('livemode_mismatch') }),
    vector('malformed_body', 'A correctly signed body that is not JSON.', { body: 'not json', headers: deliver('not json', [CURRENT], NOW), expect: refuse('malformed_body') }),
  ];
  return {
    about:
      'Webhook deliveries signed by the daemon (src/delivery/sign.ts), with the answer every verifier gives: the event id, or the reason it refuses. Generated by clients/scripts/webhook-vectors.ts; do not edit. body is the raw body (its UTF-8 bytes were signed); now is the receiver clock in unix seconds; livemode, when present, is the mode the receiver requires.',
    vectors,
  };
}

/** The file's text. */
export function vectorsText(): string {
  return `${JSON.stringify(buildWebhookVectors(), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`${path.relative(process.cwd(), VECTORS_PATH)}: ${writeIfChanged(VECTORS_PATH, vectorsText()) ? 'updated' : 'unchanged'}`);
}
