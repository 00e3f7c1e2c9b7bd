import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { buildApi, createClient } from '../helpers/api.ts';
import { newEvmWallet, newMerchant, newSession, setHead } from '../helpers/engine.ts';
import { createTransactionLookups } from '../../src/ingest/lookup.ts';
import { upsertTransfers } from '../../src/ingest/evm/persist.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';

/**
 * An api process alone (no ingester running) against anvil: a proved transaction in a block the
 * chain has finalized is stored at once, as the ingester would store it, and counts (200); one
 * above the finalized block is only claimed (202), its transfers left for the ingester.
 */
const db = useTestDatabase('checkout_proof_final');
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
let anvil: Anvil;
let app: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createClient>;

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  app = buildApi(db.store, { env: { SVC_POLYGON_RPC_URL: anvil.rpcUrl } });
  await app.ready();
  call = createClient(app);
}, 30_000);

afterAll(async () => {
  await app?.close();
  await anvil?.stop();
});

async function lookAlikes() {
  const merchantId = await newMerchant(db.store, { toleranceBps: 100 });
  const wallet = newEvmWallet();
  return {
    wallet,
    first: await newSession(db.store, { merchantId, wallet, amount: '10' }),
    second: await newSession(db.store, { merchantId, wallet, amount: '10' }),
  };
}

const payer = privateKeyToAccount(generatePrivateKey());

/** The keyed payer sends `amount` to `to` (so it can sign its proofs); the mined receipt. */
async function pay(to: string, amount: bigint) {
  await anvil.waitMined(await anvil.mint(USDC, payer.address, amount));
  return anvil.waitMined(await anvil.transfer(USDC, payer.address, to as Address, amount));
}

/** The payer's proof of `txHash` for a session, signed over the session's proof message. */
async function prove(sessionId: string, txHash: string) {
  const template = (await call('GET', `/checkout/${sessionId}`, { headers: { accept: 'application/json' } })).body.proofMessage as string;
  const signature = await payer.signMessage({ message: template.replace('{txHash}', txHash.toLowerCase()) });
  return call('POST', `/checkout/${sessionId}/transactions`, { body: { txHash, signature } });
}

const rowsOf = async (hash: string) =>
  (await db.store.query('SELECT block_hash, log_index, session_id, match_method, amount::text FROM transfers WHERE tx_hash = $1', [hash.toLowerCase()])).rows;

test('a transaction in a finalized block is stored as the ingester would store it and counts at once (final: settled at once); the ingester writing it again changes nothing', async () => {
  const { wallet, second } = await lookAlikes();
  const receipt = await pay(wallet, 9_990_000n);
  await setHead(db.store, { head: receipt.blockNumber + 10n, finalized: receipt.blockNumber });

  const answer = await prove(second.id, receipt.transactionHash);
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ bound: true, payment: { status: 'settled', amountReceived: '9.99' } });
  const transferLog = receipt.logs.find((log) => log.address.toLowerCase() === USDC.toLowerCase())!;
  expect(await rowsOf(receipt.transactionHash)).toEqual([
    { block_hash: receipt.blockHash, log_index: transferLog.logIndex, session_id: second.id, match_method: 'claim', amount: '9990000' },
  ]);

  // The ingester's write of the same log (same block) is a no-op: the binding stays.
  const lookups = createTransactionLookups({
    config: loadConfig({ SVC_POLYGON_RPC_URL: anvil.rpcUrl }),
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
  });
  const found = await lookups.lookup('polygon', receipt.transactionHash);
  await lookups.close();
  expect(found.found && found.observed).toHaveLength(1);
  expect(await db.store.transaction((sql) => upsertTransfers(sql, 'polygon', found.found ? found.observed! : []))).toBe(0);
  expect(await rowsOf(receipt.transactionHash)).toMatchObject([{ session_id: second.id, match_method: 'claim' }]);
});

test('a transaction above the finalized block is claimed (202) and nothing is stored: the ingester stores it', async () => {
  const { wallet, second } = await lookAlikes();
  const receipt = await pay(wallet, 9_990_000n);
  await setHead(db.store, { head: receipt.blockNumber, finalized: receipt.blockNumber - 1n });
  const answer = await prove(second.id, receipt.transactionHash);
  expect(answer.status).toBe(202);
  expect(await rowsOf(receipt.transactionHash)).toEqual([]);
});
