import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { cargoEnv, cargoMissing, hasCargo } from '../helpers/toolchains.ts';

const run = promisify(execFile);

// The Rust library's own tests (clients/rust: tests/ against loopback servers, the doc examples),
// built offline against Debian's crates, so `npm test` runs them. The first build on a new
// machine compiles the dependencies (about half a minute on an idle machine); later runs reuse them.
test.skipIf(!hasCargo)(
  `clients/rust: cargo fmt --check (where rustfmt is installed) and cargo test --offline pass${cargoMissing}`,
  { timeout: 600_000 },
  async () => {
    const rustfmt = await run('cargo', ['fmt', '--version'], { env: cargoEnv }).then(
      () => true,
      () => false,
    );
    if (rustfmt) await run('cargo', ['fmt', '--check'], { cwd: 'clients/rust', env: cargoEnv });
    const result = await run('cargo', ['test', '--offline'], { cwd: 'clients/rust', env: cargoEnv, maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: { stdout: string; stderr: string }) => error,
    );
    const output = `${result.stdout}\n${result.stderr}`;
    expect(output, output).not.toMatch(/FAILED|error(\[E\d+\])?:/);
    expect(output.match(/^test result: ok\. [1-9]\d* passed; 0 failed/gm)?.length ?? 0, output).toBeGreaterThanOrEqual(3);
  },
);
