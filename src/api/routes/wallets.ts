import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { createWalletChallenge, listWallets, verifyWalletChallenge, type Wallet } from '../../accounts/index.ts';
import { ChainSchema, READ_ERRORS, WRITE_ERRORS, WalletAddressSchema, errorResponses } from '../schemas.ts';

const WalletSchema = Type.Object(
  {
    id: Type.String({ description: 'Wallet identifier (`wal_…`).' }),
    chain: ChainSchema,
    address: Type.String({ description: 'Canonical address (EIP-55 on EVM chains, base58 on solana).' }),
    verified: Type.Boolean({ description: 'Ownership shown by a signature (or added by the operator).' }),
    verificationMethod: Type.Union([Type.Unsafe<string>({ type: 'string', enum: ['eip191', 'ed25519', 'operator'] }), Type.Null()]),
    verifiedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'A receiving wallet of the merchant. Wallets are shared by live and test keys.' },
);

const ChallengeSchema = Type.Object(
  {
    id: Type.String({ description: 'Challenge identifier (`wch_…`).' }),
    chain: ChainSchema,
    address: Type.String(),
    message: Type.String({ description: 'Sign exactly this text: EIP-191 personal_sign on EVM chains; ed25519 over the UTF-8 bytes on solana (base58 or base64 signature).' }),
    expiresAt: Type.String({ format: 'date-time', description: 'Ten minutes after issue; single use.' }),
  },
  { additionalProperties: false },
);

function view(wallet: Wallet) {
  return {
    id: wallet.id,
    chain: wallet.chain,
    address: wallet.address,
    verified: wallet.verified,
    verificationMethod: wallet.verificationMethod,
    verifiedAt: wallet.verifiedAt?.toISOString() ?? null,
    createdAt: wallet.createdAt.toISOString(),
  };
}

/**
 * Wallets (Interface B): `GET /wallets` lists the merchant's receiving wallets; adding one takes
 * two steps, as BTCPay's and exchanges' address whitelists do: `POST /wallets/challenges`
 * `{chain, address}` returns a message, the wallet signs it, and `POST /wallets`
 * `{challengeId, signature}` verifies the signature and adds the wallet as verified (201).
 */
export function walletRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.get(
    '/wallets',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'List connected wallets',
        querystring: Type.Object({ chain: Type.Optional(ChainSchema) }, { additionalProperties: false }),
        response: { 200: Type.Object({ data: Type.Array(WalletSchema) }, { additionalProperties: false }), ...errorResponses(...READ_ERRORS) },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return { data: (await listWallets(deps.store, { merchantId: auth.merchantId, chain: request.query.chain })).map(view) };
    },
  );

  typed.post(
    '/wallets/challenges',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Get a message to sign to prove a wallet is yours',
        body: Type.Object({ chain: ChainSchema, address: WalletAddressSchema }, { additionalProperties: false }),
        response: { 201: ChallengeSchema, ...errorResponses(...WRITE_ERRORS) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const challenge = await createWalletChallenge(deps.store, { merchantId: auth.merchantId, chain: request.body.chain, address: request.body.address });
      return reply.status(201).send({ ...challenge, expiresAt: challenge.expiresAt.toISOString() });
    },
  );

  typed.post(
    '/wallets',
    {
      schema: {
        tags: ['Interface B'],
        summary: 'Add a wallet with a signed ownership proof',
        description: '400 when the signature does not verify, or the challenge is expired or used; 404 for an unknown challenge.',
        body: Type.Object(
          {
            challengeId: Type.String({ minLength: 1, maxLength: 64 }),
            signature: Type.String({ minLength: 1, maxLength: 200, description: 'EVM: 0x + 130 hex (65 bytes); solana: base58 or base64 of 64 bytes.' }),
          },
          { additionalProperties: false },
        ),
        response: { 201: WalletSchema, ...errorResponses(...WRITE_ERRORS, 404) },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const answer = await deps.store.transaction(async (sql) => {
        const wallet = view(await verifyWalletChallenge(sql, { merchantId: auth.merchantId, challengeId: request.body.challengeId, signature: request.body.signature }));
        await saveIdempotentResponse(sql, request, 201, wallet);
        return wallet;
      });
      return reply.status(201).send(answer);
    },
  );
}
