import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { artifactText, compileDepositContracts, CONTRACTS, type ContractName } from '../../contracts/build.ts';

/**
 * The committed deposit-contract artifacts are exactly what the sources compile to with the
 * pinned solc and settings: every deposit address derives from these bytes, so a source edit
 * without a rebuild (or a rebuild with another compiler) must fail here, not move addresses.
 */
const artifactsDir = path.resolve(import.meta.dirname, '../../contracts/artifacts');

describe('deposit contract artifacts', () => {
  const compiled = compileDepositContracts();

  test.each(Object.keys(CONTRACTS) as ContractName[])('%s: the committed artifact is what the source compiles to, byte for byte', (name) => {
    const committed = fs.readFileSync(path.join(artifactsDir, `${name}.json`), 'utf8');
    expect(JSON.parse(committed).bytecode).toBe(compiled[name].bytecode);
    expect(JSON.parse(committed).deployedBytecode).toBe(compiled[name].deployedBytecode);
    expect(committed).toBe(artifactText(compiled[name]));
  });

  test('no opcode newer than paris (no PUSH0): the factory deploys on every EVM chain', () => {
    // PUSH0 is 0x5f; scan instructions, skipping PUSH immediates.
    for (const artifact of Object.values(compiled)) {
      const code = Buffer.from(artifact.bytecode.slice(2), 'hex');
      for (let i = 0; i < code.length; i++) {
        const op = code[i]!;
        expect(op, `${artifact.contractName} at ${i}`).not.toBe(0x5f);
        if (op >= 0x60 && op <= 0x7f) i += op - 0x5f;
      }
    }
  });
});
