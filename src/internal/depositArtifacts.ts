import { createRequire } from 'node:module';
import type { Abi, Hex } from 'viem';

/**
 * The committed build of the deposit-address contracts (contracts/artifacts, written by
 * `npx tsx contracts/build.ts`). Read once, synchronously, from the repository root: the same
 * relative path from src/deposits and from dist/deposits.
 */
export interface DepositContractArtifact {
  contractName: string;
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
  compiler: { version: string; settings: unknown };
}

const require = createRequire(import.meta.url);

/** The factory: deploys and flushes deposit addresses (contracts/DepositFactory.sol). */
export const depositFactoryArtifact = require('../../contracts/artifacts/DepositFactory.json') as DepositContractArtifact;

/** The implementation behind every deposit address's EIP-1167 proxy (contracts/DepositForwarder.sol). */
export const depositForwarderArtifact = require('../../contracts/artifacts/DepositForwarder.json') as DepositContractArtifact;
