/**
 * The six chain names of the wire contract, in the order the docs list them. Their own file so
 * that the configuration's readers (relayerKeys.ts) can name chains without importing config.ts,
 * which imports them: config.ts re-exports both names.
 */
export const CHAIN_NAMES = ['polygon', 'solana', 'base', 'bsc', 'arbitrum', 'optimism'] as const;
export type ChainName = (typeof CHAIN_NAMES)[number];
