import { badRequest } from '../internal/errors.ts';
import { readPermit2Authorization, type Permit2Fields } from './permit2/payload.ts';
import { readPaymentId } from './paymentId.ts';

/**
 * The x402 wire format (coinbase/x402 `specs/x402-specification-v2.md`, `specs/schemes/exact/
 * scheme_exact_evm.md`), as the reference packages (@x402/core, @x402/fetch) write and read it:
 * headers carry base64 of UTF-8 JSON. v2: `PAYMENT-REQUIRED` (402), `PAYMENT-SIGNATURE`
 * (the retried request), `PAYMENT-RESPONSE` (the answer). v1: requirements in the 402 body,
 * `X-PAYMENT`, `X-PAYMENT-RESPONSE`, network names instead of CAIP-2 ids and
 * `maxAmountRequired` instead of `amount`.
 */

export const HEADERS = {
  required: 'payment-required',
  signature: 'payment-signature',
  response: 'payment-response',
  v1Payment: 'x-payment',
  v1Response: 'x-payment-response',
} as const;

/** One way to pay a resource (spec §5.1.2 `PaymentRequirements`). */
export interface PaymentRequirements {
  scheme: 'exact';
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  /** EIP-3009: the token's EIP-712 domain. Permit2: `assetTransferMethod: "permit2"` (the domain is Permit2's own). */
  extra: { name?: string; version?: string; assetTransferMethod?: 'eip3009' | 'permit2'; [key: string]: unknown };
}

/** The same requirements as x402 v1 writes them. */
export interface PaymentRequirementsV1 extends Omit<PaymentRequirements, 'amount'> {
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
}

/** The 402 answer's `PAYMENT-REQUIRED` header (spec §5.1). */
export interface PaymentRequired {
  x402Version: 2;
  error?: string;
  resource: { url: string; description: string; mimeType: string };
  accepts: PaymentRequirements[];
  /** Extensions the resource honours (`payment-identifier`). */
  extensions?: Record<string, unknown>;
}

/** The EIP-3009 authorization a payer signs (scheme_exact_evm.md). Numbers are decimal text, nonce 32-byte hex. */
export interface Eip3009Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: string;
}

/** A payment payload after {@link readPaymentHeader}: both versions in one shape. */
export interface PaymentPayload {
  x402Version: 1 | 2;
  scheme: string;
  /** CAIP-2 (`eip155:137`) for v2; v1's network names are translated to it. */
  network: string;
  /** v2's echo of the resource it pays (`resource.url`); absent in v1. */
  resourceUrl?: string | undefined;
  /** v2's echo of the requirements the payer chose; absent in v1. */
  accepted?: Partial<PaymentRequirements> | undefined;
  /** EIP-3009's authorization, or the Permit2 route's permit in the same terms (permit2/payload.ts). */
  authorization: Eip3009Authorization;
  signature: `0x${string}`;
  /** The Permit2 route's own fields; absent for EIP-3009. */
  permit2?: Permit2Fields | undefined;
  /** The `payment-identifier` extension's id (paymentId.ts), when the client sent one. */
  paymentId?: string | undefined;
}

/** The `PAYMENT-RESPONSE` header (spec §5.3) and the facilitator's settle answer. */
export interface SettleResponse {
  success: boolean;
  errorReason?: string;
  transaction: string;
  network: string;
  payer?: string;
}

/**
 * x402 v1 network names of the chains that have EIP-3009 tokens, as @x402/evm knows them
 * (optimism and arbitrum are not v1 networks there, so v1 clients cannot pay on them).
 */
const V1_NETWORKS: Partial<Record<string, number>> = { polygon: 137, base: 8453, 'polygon-amoy': 80002, 'base-sepolia': 84532 };

/** The v1 name of a CAIP-2 network, when v1 has one. */
export function v1NetworkName(caip2: string): string | undefined {
  const id = Number(caip2.split(':')[1]);
  return Object.entries(V1_NETWORKS).find(([, chainId]) => chainId === id)?.[0];
}

/** `eip155:<chain id>`: CAIP-2, as v2 names networks. */
export function caip2(chainId: number): string {
  return `eip155:${chainId}`;
}

/** Base64 of UTF-8 JSON, as every x402 header is written. */
export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const HEX_32 = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT = /^\d{1,78}$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130,}$/;

function fieldError(problem: string): never {
  throw badRequest(`unreadable x402 payment: ${problem}`);
}

/**
 * Reads a `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1) header of the EVM `exact` scheme.
 * @throws {InvalidRequestError} (400) when it is not base64 JSON of that shape: nothing about it
 * can be checked, so it is not a payment that failed (402) but a request that cannot be read.
 */
export function readPaymentHeader(header: string): PaymentPayload {
  const text = header.trim();
  if (text.length === 0 || text.length > 16_384 || !BASE64.test(text)) fieldError('not base64');
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
  } catch {
    fieldError('not JSON');
  }
  return readPaymentPayload(raw);
}

/** Reads a payment payload (the decoded header, or the facilitator request's `paymentPayload`). */
export function readPaymentPayload(raw: unknown): PaymentPayload {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fieldError('not a JSON object');
  const body = raw as Record<string, unknown>;
  const version = body.x402Version;
  if (version !== 1 && version !== 2) fieldError('x402Version must be 1 or 2');
  const accepted = version === 2 ? (body.accepted as Record<string, unknown> | undefined) : undefined;
  if (version === 2 && (typeof accepted !== 'object' || accepted === null)) fieldError('accepted must be the chosen payment requirements');
  const scheme = version === 2 ? accepted!.scheme : body.scheme;
  const networkText = version === 2 ? accepted!.network : body.network;
  if (typeof scheme !== 'string' || typeof networkText !== 'string') fieldError('scheme and network are required');
  const network = version === 1 && V1_NETWORKS[networkText] !== undefined ? caip2(V1_NETWORKS[networkText]!) : networkText;
  const payload = body.payload as Record<string, unknown> | undefined;
  if (typeof payload !== 'object' || payload === null) fieldError('payload is required');
  const permit2 = readPermit2Authorization(payload, fieldError);
  const authorization = (permit2?.authorization ?? payload.authorization) as Record<string, unknown> | undefined;
  if (typeof authorization !== 'object' || authorization === null)
    fieldError('payload.authorization (EIP-3009) or payload.permit2Authorization (Permit2) is required (EVM exact scheme)');
  for (const key of ['from', 'to'] as const)
    if (typeof authorization[key] !== 'string' || !ADDRESS.test(authorization[key])) fieldError(`authorization.${key} must be an address`);
  for (const key of ['value', 'validAfter', 'validBefore'] as const)
    if (typeof authorization[key] !== 'string' || !UINT.test(authorization[key])) fieldError(`authorization.${key} must be an unsigned integer as text`);
  if (typeof authorization.nonce !== 'string' || !HEX_32.test(authorization.nonce)) fieldError('authorization.nonce must be 32 bytes of hex');
  if (typeof payload.signature !== 'string' || !SIGNATURE.test(payload.signature) || payload.signature.length % 2 !== 0)
    fieldError('payload.signature must be hex');
  return {
    x402Version: version,
    scheme,
    network,
    accepted: accepted as Partial<PaymentRequirements> | undefined,
    resourceUrl: typeof (body.resource as { url?: unknown } | undefined)?.url === 'string' ? (body.resource as { url: string }).url : undefined,
    authorization: {
      from: authorization.from as string,
      to: authorization.to as string,
      value: authorization.value as string,
      validAfter: authorization.validAfter as string,
      validBefore: authorization.validBefore as string,
      nonce: (authorization.nonce as string).toLowerCase(),
    },
    signature: payload.signature as `0x${string}`,
    ...(permit2 ? { permit2: permit2.permit2 } : {}),
    paymentId: readPaymentId(body.extensions, fieldError),
  };
}
