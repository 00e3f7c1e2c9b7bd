import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../deps.ts';
import { authOf } from '../auth.ts';
import { saveIdempotentResponse } from '../idempotency.ts';
import { auditApiChange } from '../audit.ts';
import { createWalletChallenge, listWallets, removeWallet, setDefaultWallet, verifyWalletChallenge, type Wallet } from '../../accounts/index.ts';
import { forbidden } from '../../internal/errors.ts';
import { ChainSchema, IdParam, READ_ERRORS, WRITE_ERRORS, WalletAddressSchema, errorResponses } from '../schemas.ts';

const WalletSchema = Type.Object(
  {
    id: Type.String({ description: 'Wallet identifier (`wal_…`).' }),
    chain: ChainSchema,
    address: Type.String({ description: 'Canonical address (EIP-55 on EVM chains, base58 on solana).' }),
    verified: Type.Boolean({ description: 'Ownership shown by a signature (or added by the operator).' }),
    verificationMethod: Type.Union([Type.Unsafe<string>({ type: 'string', enum: ['eip191', 'ed25519', 'operator'] }), Type.Null()]),
    verifiedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    default: Type.Boolean({
      description:
        "The default wallet of its chain: live payments and links that name no `merchantWallet` pay it (without a default, the chain's only verified wallet). At most one per chain, set explicitly.",
    }),
    createdAt: Type.String({ format: 'date-time' }),
  },
  {
    additionalProperties: false,
    description: 'A receiving wallet of the merchant. Any key of the merchant lists them; only a live key with the write scope manages them.',
  },
);

const ChallengeSchema = Type.Object(
  {
    id: Type.String({ description: 'Challenge identifier (`wch_…`).' }),
    chain: ChainSchema,
    address: Type.String(),
    message: Type.String({
      description: 'Sign exactly this text: EIP-191 personal_sign on EVM chains; ed25519 over the UTF-8 bytes on solana (base58 or base64 signature).',
    }),
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
    default: wallet.isDefault,
    createdAt: wallet.createdAt.toISOString(),
  };
}

/**
 * Receiving wallets decide where live money goes, so only a live key manages them: a sandbox key
 * (handed to developers, CI, test environments) must not be able to redirect live payments.
 * Runs on `onRequest`, after authentication and the scope check, before the body is validated.
 */
async function requireLiveKey(request: FastifyRequest): Promise<void> {
  if (!authOf(request).livemode) {
    throw forbidden(
      'receiving wallets are managed with a live API key (write scope): a test key may list them but not add, verify, remove or choose the default wallet, since live payments are paid to them',
    );
  }
}

const WalletIdParam = IdParam('id', 'wal');
const WALLET_403 = 'A test key, or a key without the write scope: receiving wallets are managed with a live key.';

/**
 * Wallets (Interface B): `GET /wallets` lists the merchant's receiving wallets (any key); adding one
 * takes two steps, as BTCPay's and exchanges' address whitelists do: `POST /wallets/challenges`
 * `{chain, address}` returns a message, the wallet signs it, and `POST /wallets`
 * `{challengeId, signature, default?}` verifies the signature and adds the wallet as verified (201).
 * `POST /wallets/{id}/default` makes a verified wallet its chain's default; `DELETE /wallets/{id}`
 * removes one. Everything but the list needs a live key with the write scope.
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
      onRequest: requireLiveKey,
      schema: {
        tags: ['Interface B'],
        summary: 'Get a message to sign to prove a wallet is yours',
        body: Type.Object({ chain: ChainSchema, address: WalletAddressSchema }, { additionalProperties: false }),
        response: { 201: ChallengeSchema, ...errorResponses(...WRITE_ERRORS), 403: { ...errorResponses(403)[403], description: WALLET_403 } },
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
      onRequest: requireLiveKey,
      schema: {
        tags: ['Interface B'],
        summary: 'Add a wallet with a signed ownership proof',
        description:
          '400 when the signature does not verify, or the challenge is expired or used; 404 for an unknown challenge. With `"default": true` the wallet becomes its chain\'s default; otherwise the default does not change.',
        body: Type.Object(
          {
            challengeId: Type.String({ minLength: 1, maxLength: 64 }),
            signature: Type.String({ minLength: 1, maxLength: 200, description: 'EVM: 0x + 130 hex (65 bytes); solana: base58 or base64 of 64 bytes.' }),
            default: Type.Optional(Type.Boolean({ description: 'Make this wallet the default of its chain (replacing the previous default). Default false.' })),
          },
          { additionalProperties: false },
        ),
        response: { 201: WalletSchema, ...errorResponses(...WRITE_ERRORS, 404), 403: { ...errorResponses(403)[403], description: WALLET_403 } },
      },
    },
    async (request, reply) => {
      const auth = authOf(request);
      const answer = await deps.store.transaction(async (sql) => {
        const added = await verifyWalletChallenge(sql, {
          merchantId: auth.merchantId,
          challengeId: request.body.challengeId,
          signature: request.body.signature,
          makeDefault: request.body.default ?? false,
        });
        const wallet = view(added);
        // Wallets have no mode (they receive live money): livemode null, as the dashboard records them.
        const details = { chain: added.chain, address: added.address, method: added.verificationMethod };
        await auditApiChange(sql, request, 'wallet.added', { target: added.id, livemode: null, details });
        if (added.isDefault) await auditApiChange(sql, request, 'wallet.default_set', { target: added.id, livemode: null, details });
        await saveIdempotentResponse(sql, request, 201, wallet);
        return wallet;
      });
      return reply.status(201).send(answer);
    },
  );

  typed.post(
    '/wallets/:id/default',
    {
      onRequest: requireLiveKey,
      schema: {
        tags: ['Interface B'],
        summary: 'Make a verified wallet the default of its chain',
        description:
          'Live payments and payment links that name no `merchantWallet` pay the default wallet of their chain. The previous default stops being it. 409 for an unverified wallet.',
        params: WalletIdParam,
        response: { 200: WalletSchema, ...errorResponses(...WRITE_ERRORS, 404), 403: { ...errorResponses(403)[403], description: WALLET_403 } },
      },
    },
    async (request) => {
      const auth = authOf(request);
      return deps.store.transaction(async (sql) => {
        const chosen = await setDefaultWallet(sql, { merchantId: auth.merchantId, walletId: request.params.id! });
        const wallet = view(chosen);
        await auditApiChange(sql, request, 'wallet.default_set', {
          target: chosen.id,
          livemode: null,
          details: { chain: chosen.chain, address: chosen.address },
        });
        await saveIdempotentResponse(sql, request, 200, wallet);
        return wallet;
      });
    },
  );

  typed.delete(
    '/wallets/:id',
    {
      onRequest: requireLiveKey,
      schema: {
        tags: ['Interface B'],
        summary: 'Remove a receiving wallet',
        description:
          '409 while a live payment still watched for payment (its monitoring window open) pays this wallet, or an active live payment link names it. Removing the default wallet leaves its chain without a default: live payments there then need `merchantWallet` until another is chosen, unless exactly one verified wallet is left, which they then pay.',
        params: WalletIdParam,
        response: {
          200: Type.Object({ id: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }),
          ...errorResponses(400, 401, 404, 409, 429, 503),
          403: { ...errorResponses(403)[403], description: WALLET_403 },
        },
      },
    },
    async (request) => {
      const auth = authOf(request);
      const removed = await deps.store.transaction(async (sql) => {
        const wallet = await removeWallet(sql, { merchantId: auth.merchantId, walletId: request.params.id! });
        await auditApiChange(sql, request, 'wallet.removed', {
          target: wallet.id,
          livemode: null,
          details: { chain: wallet.chain, address: wallet.address, wasDefault: wallet.isDefault },
        });
        return wallet;
      });
      return { id: removed.id, deleted: true };
    },
  );
}
