import { expect, test } from 'vitest';
import { loadChains } from '../../src/internal/chains.ts';
import {
  BOOTSTRAP_LOCK_KEY,
  dueAmountLockText,
  engineChainLockText,
  EVM_INGEST_LOCK_CLASS,
  ingestLockKey,
  MIGRATION_LOCK_KEY,
  SOLANA_INGEST_LOCK,
} from '../../src/store/lockKeys.ts';

test('every chain has its own ingest leader lock, and no key of one scheme equals a key of another', () => {
  const chains = Object.values(loadChains());
  const pairs = chains.map((chain) => ingestLockKey(chain).join(':'));
  expect(new Set(pairs).size).toBe(chains.length);
  // The Solana lock lives in its own class: no EVM chain id can name it.
  expect(SOLANA_INGEST_LOCK[0]).not.toBe(EVM_INGEST_LOCK_CLASS);
  expect(BOOTSTRAP_LOCK_KEY).not.toBe(MIGRATION_LOCK_KEY);
  // Hashed texts are namespaced, so an engine chain lock never hashes the same text as a due-amount lock.
  expect(engineChainLockText({ livemode: true, chain: 'polygon' }).startsWith('svc.engine:')).toBe(true);
  expect(dueAmountLockText({ chain: 'polygon', currency: 'USDC', payTo: '0xabc', bucket: 7n }).startsWith('due:')).toBe(true);
});

test('the keys are the ones released daemons take, so old and new processes exclude each other during a rolling upgrade', () => {
  expect(BOOTSTRAP_LOCK_KEY).toBe(0x7376632d626f6f74n);
  expect(MIGRATION_LOCK_KEY).toBe(0x7376632d6d696772n);
  expect(ingestLockKey(loadChains().polygon)).toEqual([0x73766369, 137]);
  expect(ingestLockKey(loadChains().solana)).toEqual([0x73766300, 0x736f6c]);
  expect(engineChainLockText({ livemode: false, chain: 'base' })).toBe('svc.engine:false:base');
  expect(dueAmountLockText({ chain: 'bsc', currency: 'USDT', payTo: '0xabc', bucket: 1200n })).toBe('due:bsc:USDT:0xabc:1200');
});
