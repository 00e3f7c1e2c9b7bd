import { describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { useTestDatabase } from '../helpers/db.ts';
import { CHAIN_IDS, startAnvil, type EvmChainName } from '../helpers/anvil.ts';
import { approvePermit2, deployPermit2OnAnvil } from '../helpers/permit2.ts';
import { installEip3009Token } from '../helpers/eip3009Token.ts';
import { box, GENEROUS_LIMITS, newMerchant } from '../helpers/api.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';
import { X402_EXACT_PERMIT2_PROXY } from '../../src/x402/permit2/contracts.ts';

/**
 * The (chain, token, method) matrix of docs/agents.md on the EVM chains polygon's own test does not
 * cover (test/x402/permit2.anvil.test.ts): for each chain, anvil with its production chain id, the
 * canonical Permit2 and x402 proxy, every configured token at its real address. Each currency's
 * 402 names the method of the matrix (EIP-3009 for native USDC, Permit2 for the others), and the
 * real @x402/fetch client pays a session of each currency into the merchant's wallet (native USDC
 * through a FiatToken-compatible EIP-3009 token installed at its real address).
 */
const db = useTestDatabase('x402_permit2_chains');
const chains = loadChains();

/** What docs/agents.md's matrix says each (chain, currency) session is paid with. */
const MATRIX: Record<Exclude<EvmChainName, 'polygon'>, Record<'USDC' | 'USDT', 'eip3009' | 'permit2'>> = {
  base: { USDC: 'eip3009', USDT: 'permit2' },
  bsc: { USDC: 'permit2', USDT: 'permit2' },
  arbitrum: { USDC: 'eip3009', USDT: 'permit2' },
  optimism: { USDC: 'eip3009', USDT: 'permit2' },
};

describe('x402 on every EVM chain: the method per (chain, token), and a Permit2 settlement', () => {
  for (const [chain, methods] of Object.entries(MATRIX) as [keyof typeof MATRIX, (typeof MATRIX)[keyof typeof MATRIX]][]) {
    test(`${chain}: USDC by ${methods.USDC}, USDT by ${methods.USDT}; @x402/fetch pays both into the merchant's wallet`, async () => {
      const anvil = await startAnvil({ chain });
      const logger = createLogger({ level: 'silent' });
      const metrics = createMetricsRegistry();
      let app: ReturnType<typeof createHttp> | undefined;
      try {
        await anvil.installChainTokens();
        await deployPermit2OnAnvil(anvil);
        const relayerKey = generatePrivateKey();
        await anvil.client.setBalance({ address: privateKeyToAccount(relayerKey).address, value: 10n ** 18n });
        const upper = chain.toUpperCase();
        const config = loadConfig({
          [`SVC_${upper}_RPC_URL`]: anvil.rpcUrl,
          [`SVC_${upper}_RELAYER_KEY`]: relayerKey,
          SVC_PUBLIC_URL: 'http://127.0.0.1:1',
          LOG_LEVEL: 'silent',
        });
        const x402 = createX402({ store: db.store, logger, metrics, config, pollMs: 100 });
        await x402.probe();
        app = createHttp({ store: db.store, logger, metrics, config, box, x402, rateLimits: GENEROUS_LIMITS });
        const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
        config.publicUrl = baseUrl;
        const merchant = await newMerchant(db.store, `Shop on ${chain}`);
        const wallet = newEvmWallet(chain) as Address;
        await addWallet(db.store, { merchantId: merchant.id, chain, address: wallet, verifiedBy: 'operator' });
        // USDT on base is not accepted by default (a bridged token there): the merchant opts in.
        await db.store.query('UPDATE merchants SET accept_bridged_tokens = true WHERE id = $1', [merchant.id]);
        const payer = privateKeyToAccount(generatePrivateKey());
        const network = `eip155:${CHAIN_IDS[chain]}`;

        for (const currency of ['USDC', 'USDT'] as const) {
          const created = await fetch(`${baseUrl}/api/v1/sessions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${merchant.live}`, 'content-type': 'application/json' },
            body: JSON.stringify({ amount: '1.25', currency, chain, merchantWallet: wallet }),
          });
          expect(created.status).toBe(201);
          const session = (await created.json()) as { id: string; amountDueBaseUnits: string; x402Url: string };
          const challenge = await fetch(session.x402Url);
          expect(challenge.status).toBe(402);
          const [accepted] = JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()).accepts;
          const token = chains[chain].tokens.find((candidate) => candidate.address.toLowerCase() === accepted.asset.toLowerCase())!;
          expect({ network: accepted.network, currency: token.currency, amount: accepted.amount }).toEqual({
            network,
            currency,
            amount: session.amountDueBaseUnits,
          });
          expect(accepted.extra.assetTransferMethod ?? 'eip3009').toBe(methods[currency]);
          if (methods[currency] === 'eip3009') {
            expect(accepted.extra).toEqual({ name: token.eip3009!.name, version: token.eip3009!.version });
            // A FiatToken-compatible EIP-3009 token at the chain's real USDC address.
            await installEip3009Token(anvil, token.address as Address, token.decimals);
          }
          await anvil.waitMined(await anvil.mint(token.address as Address, payer.address, BigInt(session.amountDueBaseUnits)));
          if (methods[currency] === 'permit2') await approvePermit2(anvil, payer, token.address as Address);
          const client = new x402Client().register(network as `eip155:${number}`, new ExactEvmScheme(payer));
          client.setSpendControls({
            allowedAssets: [{ network: network as `eip155:${number}`, asset: token.address, maxAmountPerPayment: session.amountDueBaseUnits }],
          });
          const paid = await wrapFetchWithPayment(fetch, client)(session.x402Url);
          expect(paid.status).toBe(200);
          const settled = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
          expect(settled).toMatchObject({ success: true, network, payer: payer.address });
          const tx = await anvil.client.getTransaction({ hash: settled.transaction as `0x${string}` });
          // Permit2 goes through x402's proxy; EIP-3009 calls the token's transferWithAuthorization.
          expect(tx.to?.toLowerCase()).toBe(methods[currency] === 'permit2' ? X402_EXACT_PERMIT2_PROXY.toLowerCase() : token.address.toLowerCase());
          expect(await anvil.balanceOf(token.address as Address, wallet)).toBe(BigInt(session.amountDueBaseUnits));
          expect(await anvil.balanceOf(token.address as Address, payer.address)).toBe(0n);
        }
      } finally {
        await app?.close();
        await anvil.stop();
      }
    });
  }
});
