import type { Sql } from '../store/index.ts';
import { conflict } from '../internal/errors.ts';

/**
 * x402's `payment-identifier` extension (coinbase/x402 `specs/extensions/payment_identifier.md`):
 * a client's idempotency key for a payment. The same id with the same payload answers the first
 * result (the settlement's replay does that: same signature, same row); the same id with another
 * payload is a 409 and nothing is sent. Ids are per merchant: one merchant's ids say nothing about
 * another's (x402_payment_ids, migration 047).
 */

export const PAYMENT_IDENTIFIER = 'payment-identifier';
const ID = /^[A-Za-z0-9_-]{16,128}$/;

/** What the 402 declares: ids are honoured, not required (a client without the extension still pays). */
export function paymentIdentifierDeclaration() {
  return {
    [PAYMENT_IDENTIFIER]: {
      info: { required: false },
      schema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { required: { type: 'boolean' }, id: { type: 'string', minLength: 16, maxLength: 128 } },
        required: ['required'],
      },
    },
  };
}

/**
 * The id in a payment payload's `extensions`, or undefined without one. `fail` throws the 400 of
 * an unreadable header: an id that breaks the spec's format is refused, never ignored (the client
 * meant it as its idempotency key).
 */
export function readPaymentId(extensions: unknown, fail: (problem: string) => never): string | undefined {
  if (extensions === undefined || extensions === null) return undefined;
  if (typeof extensions !== 'object' || Array.isArray(extensions)) fail('extensions must be an object');
  const extension = (extensions as Record<string, unknown>)[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined;
  const id = extension?.info?.id;
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || !ID.test(id)) fail('extensions["payment-identifier"].info.id must be 16 to 128 letters, digits, hyphens or underscores');
  return id;
}

/**
 * Records `paymentId` for `payloadHash` under the merchant, or checks it against the payload it
 * was first seen with. Concurrent first uses meet on the primary key: one inserts, the others
 * read it.
 * @throws {ConflictError} (409) when the id was used with another payload.
 */
export async function holdPaymentId(sql: Sql, params: { merchantId: string; paymentId: string; payloadHash: string }): Promise<void> {
  await sql.query(`INSERT INTO x402_payment_ids (merchant_id, payment_id, payload_hash) VALUES ($1, $2, $3) ON CONFLICT (merchant_id, payment_id) DO NOTHING`, [
    params.merchantId,
    params.paymentId,
    params.payloadHash,
  ]);
  const { rows } = await sql.query<{ payload_hash: string }>('SELECT payload_hash FROM x402_payment_ids WHERE merchant_id = $1 AND payment_id = $2', [
    params.merchantId,
    params.paymentId,
  ]);
  if (rows[0]!.payload_hash !== params.payloadHash)
    throw conflict(`payment identifier ${params.paymentId} was already used with another payment payload; use a new identifier for a new payment`);
}
