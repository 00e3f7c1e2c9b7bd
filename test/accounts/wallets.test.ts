import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getAddressDecoder, getBase58Decoder } from '@solana/kit';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet, createMerchant, createWalletChallenge, listWallets, verifyWalletChallenge } from '../../src/accounts/index.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import { refusalAnswer } from '../../src/api/httpErrors.ts';

const db = useTestDatabase('wallets');
const box = createSecretBox(randomBytes(32));

async function merchantId() {
  return (await createMerchant(db.store, box, { name: 'Wallets Ltd' })).merchant.id;
}

/** A fresh ed25519 keypair as a solana address and a signer of UTF-8 messages (base58 output). */
function solanaKeypair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return {
    address: getAddressDecoder().decode(raw),
    signMessage: (message: string) => getBase58Decoder().decode(sign(null, Buffer.from(message), privateKey)),
  };
}

/** The domain function refuses with an error the HTTP layer answers as `status` and `{"error": message}`. */
async function expectHttpError(promise: Promise<unknown>, status: number, message: string) {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(refusalAnswer(error)).toEqual({ status, headers: {}, body: { error: message } });
}

describe('wallet ownership proofs', () => {
  test('EIP-191: a signature by the wallet verifies it; the challenge works once', async () => {
    const merchant = await merchantId();
    const account = privateKeyToAccount(generatePrivateKey());
    const challenge = await createWalletChallenge(db.store, { merchantId: merchant, chain: 'base', address: account.address.toLowerCase() });
    expect(challenge.address).toBe(account.address);
    expect(challenge.message).toContain(`Address: ${account.address}`);
    const signature = await account.signMessage({ message: challenge.message });
    const wallet = await verifyWalletChallenge(db.store, { merchantId: merchant, challengeId: challenge.id, signature });
    expect(wallet).toMatchObject({ chain: 'base', address: account.address, verified: true, verificationMethod: 'eip191' });
    await expectHttpError(
      verifyWalletChallenge(db.store, { merchantId: merchant, challengeId: challenge.id, signature }),
      400,
      'this wallet challenge was already used; request a new one',
    );
  });

  test('EIP-191: a signature by another key is refused and verifies nothing', async () => {
    const merchant = await merchantId();
    const owner = privateKeyToAccount(generatePrivateKey());
    const impostor = privateKeyToAccount(generatePrivateKey());
    const challenge = await createWalletChallenge(db.store, { merchantId: merchant, chain: 'polygon', address: owner.address });
    await expectHttpError(
      verifyWalletChallenge(db.store, {
        merchantId: merchant,
        challengeId: challenge.id,
        signature: await impostor.signMessage({ message: challenge.message }),
      }),
      400,
      `signature does not verify for ${owner.address} over the challenge message`,
    );
    expect(await listWallets(db.store, { merchantId: merchant })).toEqual([]);
  });

  test('ed25519 on solana: base58 signature of the message verifies; a tampered one does not', async () => {
    const merchant = await merchantId();
    const keypair = solanaKeypair();
    const challenge = await createWalletChallenge(db.store, { merchantId: merchant, chain: 'solana', address: keypair.address });
    const tampered = keypair.signMessage(`${challenge.message} `);
    await expectHttpError(
      verifyWalletChallenge(db.store, { merchantId: merchant, challengeId: challenge.id, signature: tampered }),
      400,
      `signature does not verify for ${keypair.address} over the challenge message`,
    );
    const wallet = await verifyWalletChallenge(db.store, {
      merchantId: merchant,
      challengeId: challenge.id,
      signature: keypair.signMessage(challenge.message),
    });
    expect(wallet).toMatchObject({ chain: 'solana', address: keypair.address, verified: true, verificationMethod: 'ed25519' });
  });

  test('expired challenges and other merchants’ challenges are refused', async () => {
    const merchant = await merchantId();
    const other = await merchantId();
    const account = privateKeyToAccount(generatePrivateKey());
    const challenge = await createWalletChallenge(db.store, {
      merchantId: merchant,
      chain: 'bsc',
      address: account.address,
      now: new Date(Date.now() - 11 * 60_000),
    });
    const signature = await account.signMessage({ message: challenge.message });
    await expectHttpError(
      verifyWalletChallenge(db.store, { merchantId: other, challengeId: challenge.id, signature }),
      404,
      `wallet challenge ${challenge.id} not found`,
    );
    await expectHttpError(
      verifyWalletChallenge(db.store, { merchantId: merchant, challengeId: challenge.id, signature }),
      400,
      'this wallet challenge has expired; request a new one',
    );
  });

  test('addresses are checked per chain and stored canonically; a wrong checksum is refused', async () => {
    const merchant = await merchantId();
    const wallet = await addWallet(db.store, { merchantId: merchant, chain: 'arbitrum', address: '0x52908400098527886e0f7030069857d2e4169ee7' });
    expect(wallet).toMatchObject({ address: '0x52908400098527886E0F7030069857D2E4169EE7', verified: false });
    await expectHttpError(
      addWallet(db.store, { merchantId: merchant, chain: 'arbitrum', address: '0x52908400098527886e0F7030069857D2E4169EE7' }),
      400,
      'address "0x52908400098527886e0F7030069857D2E4169EE7" is not a valid arbitrum address',
    );
    await expectHttpError(
      addWallet(db.store, { merchantId: merchant, chain: 'solana', address: '0x52908400098527886E0F7030069857D2E4169EE7' }),
      400,
      'address "0x52908400098527886E0F7030069857D2E4169EE7" is not a valid solana address',
    );
    // Adding again returns the same wallet; verification by the operator upgrades it.
    const again = await addWallet(db.store, { merchantId: merchant, chain: 'arbitrum', address: wallet.address, verifiedBy: 'operator' });
    expect(again).toMatchObject({ id: wallet.id, verified: true, verificationMethod: 'operator' });
  });
});
