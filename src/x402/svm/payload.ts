import { badRequest } from '../../internal/errors.ts';
import { sha256Hex } from '../../internal/crypto.ts';
import { readPaymentId } from '../paymentId.ts';

/**
 * The SVM `exact` payment payload (scheme_exact_svm.md, "PaymentPayload `payload` Field"), x402 v2
 * as @x402/fetch sends it in `PAYMENT-SIGNATURE`: `{ x402Version: 2, resource, accepted,
 * payload: { transaction: <base64 of the partially signed transaction> } }`. v1 has no Solana
 * network this gateway names (its 402 body lists EVM networks only), so v1 is refused.
 */
export interface SvmPaymentPayload {
  x402Version: 2;
  scheme: string;
  network: string;
  resourceUrl?: string | undefined;
  accepted: Record<string, unknown>;
  /** Base64 of the wire transaction (signatures, then the message). */
  transaction: string;
  /** The `payment-identifier` extension's id (paymentId.ts), when the client sent one. */
  paymentId?: string | undefined;
}

/**
 * What identifies one payment payload for the `payment-identifier` extension: sha256 of its
 * transaction's bytes. The same payload sent again hashes the same; any other transaction
 * (another amount, blockhash or memo) does not.
 */
export function svmPayloadHash(payload: Pick<SvmPaymentPayload, 'transaction'>): string {
  return sha256Hex(Buffer.from(payload.transaction, 'base64'));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** A Solana transaction is at most 1232 bytes: 1644 characters of base64. */
const MAX_TRANSACTION_BASE64 = 1644;

function fieldError(problem: string): never {
  throw badRequest(`unreadable x402 payment: ${problem}`);
}

function decodeHeader(header: string): unknown {
  const text = header.trim();
  if (text.length === 0 || text.length > 16_384 || !BASE64.test(text)) fieldError('not base64');
  try {
    return JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
  } catch {
    fieldError('not JSON');
  }
}

/**
 * The `resource.url` a v2 payment header names, whatever its scheme's payload (payment links
 * read it to find the session paid); undefined when it names none.
 * @throws {InvalidRequestError} when the header is not base64 JSON.
 */
export function paymentResourceUrl(header: string): string | undefined {
  const body = decodeHeader(header) as { resource?: { url?: unknown } } | null;
  const url = body && typeof body === 'object' ? body.resource?.url : undefined;
  return typeof url === 'string' ? url : undefined;
}

/**
 * Reads a `PAYMENT-SIGNATURE` header of the SVM exact scheme.
 * @throws {InvalidRequestError} (400) when it is not base64 JSON of that shape.
 */
export function readSvmPaymentHeader(header: string): SvmPaymentPayload {
  return readSvmPayment(decodeHeader(header));
}

/**
 * Reads an SVM exact payment payload already parsed from JSON (the facilitator's
 * `paymentPayload`).
 * @throws {InvalidRequestError} (400) when it is not of that shape.
 */
export function readSvmPayment(raw: unknown): SvmPaymentPayload {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fieldError('not a JSON object');
  const body = raw as Record<string, unknown>;
  if (body.x402Version !== 2) fieldError('x402Version must be 2 on solana (x402 v1 has no network for this gateway there)');
  const accepted = body.accepted as Record<string, unknown> | undefined;
  if (typeof accepted !== 'object' || accepted === null || Array.isArray(accepted)) fieldError('accepted must be the chosen payment requirements');
  if (typeof accepted.scheme !== 'string' || typeof accepted.network !== 'string') fieldError('scheme and network are required');
  const payload = body.payload as Record<string, unknown> | undefined;
  if (typeof payload !== 'object' || payload === null) fieldError('payload is required');
  const transaction = payload.transaction;
  if (typeof transaction !== 'string' || transaction.length === 0 || transaction.length > MAX_TRANSACTION_BASE64 || !BASE64.test(transaction))
    fieldError('payload.transaction must be a base64 Solana transaction (SVM exact scheme)');
  const url = (body.resource as { url?: unknown } | undefined)?.url;
  return {
    x402Version: 2,
    scheme: accepted.scheme,
    network: accepted.network,
    resourceUrl: typeof url === 'string' ? url : undefined,
    accepted,
    transaction,
    paymentId: readPaymentId(body.extensions, fieldError),
  };
}
