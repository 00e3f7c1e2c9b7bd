/**
 * Compiles the deposit-address contracts (DepositForwarder.sol, DepositFactory.sol) with the pinned
 * solc-js from npm, offline, and writes contracts/artifacts/<Name>.json: abi, creation bytecode,
 * runtime bytecode, the compiler version and the exact settings. `npx tsx contracts/build.ts`
 * rewrites them; test/contracts/depositArtifacts.test.ts recompiles and compares byte for byte.
 *
 * The settings are part of every deposit address: the factory's address is the CREATE2 address of
 * its creation bytecode, and each deposit address derives from the factory's. Changing the
 * sources, the compiler or these settings moves every address (see docs/deposit-addresses.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The compiler release the artifacts are built with (the `solc` devDependency must be this one). */
export const SOLC_VERSION = '0.8.37+commit.f401782d.Emscripten.clang';

/** The contracts compiled, in their source files. */
export const CONTRACTS = { DepositForwarder: 'DepositForwarder.sol', DepositFactory: 'DepositFactory.sol' } as const;
export type ContractName = keyof typeof CONTRACTS;

/**
 * Solidity compiler settings. evmVersion paris (no PUSH0) so the same bytecode deploys on any
 * EVM chain, including ones without Shanghai: a deposit sent on such a chain can still be
 * recovered there. No CBOR metadata: the bytecode (and so every address) does not change when a
 * comment does.
 */
export const SETTINGS = {
  evmVersion: 'paris',
  optimizer: { enabled: true, runs: 10_000 },
  metadata: { appendCBOR: false },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
} as const;

export interface ContractArtifact {
  contractName: ContractName;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
  compiler: { version: string; settings: typeof SETTINGS };
}

/** Compiles both contracts; throws on any compiler error or on a compiler other than SOLC_VERSION. */
export function compileDepositContracts(): Record<ContractName, ContractArtifact> {
  const solc = require('solc');
  const version: string = solc.version();
  if (version !== SOLC_VERSION) throw new Error(`solc ${version} installed; the deposit contracts are built with ${SOLC_VERSION}`);
  const sources = Object.fromEntries(Object.values(CONTRACTS).map((file) => [file, { content: fs.readFileSync(path.join(here, file), 'utf8') }]));
  const input = { language: 'Solidity', sources, settings: SETTINGS };
  const findImports = () => ({ error: 'the deposit contracts import only each other' });
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
  const errors = (output.errors ?? []).filter((error: { severity: string }) => error.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((error: { formattedMessage: string }) => error.formattedMessage).join('\n'));
  const artifacts = {} as Record<ContractName, ContractArtifact>;
  for (const [name, file] of Object.entries(CONTRACTS) as [ContractName, string][]) {
    const contract = output.contracts[file][name];
    artifacts[name] = {
      contractName: name,
      abi: contract.abi,
      bytecode: `0x${contract.evm.bytecode.object}`,
      deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
      compiler: { version, settings: SETTINGS },
    };
  }
  return artifacts;
}

/** The committed text of one artifact (what the build writes and the test compares). */
export function artifactText(artifact: ContractArtifact): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.mkdirSync(path.join(here, 'artifacts'), { recursive: true });
  for (const artifact of Object.values(compileDepositContracts())) {
    const file = path.join(here, 'artifacts', `${artifact.contractName}.json`);
    fs.writeFileSync(file, artifactText(artifact));
    console.log(`wrote ${path.relative(process.cwd(), file)} (runtime ${(artifact.deployedBytecode.length - 2) / 2} bytes)`);
  }
}
