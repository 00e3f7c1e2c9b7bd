import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { goEnv, goMissing, hasGo } from '../helpers/toolchains.ts';

const run = promisify(execFile);

// The Go library's own tests (clients/go, standard library testing), so `npm test` runs them;
// gofmt and go vet first: the generated files are what gofmt makes, and vet checks the rest.
test.skipIf(!hasGo)(`clients/go: gofmt -l is empty, go vet and go test ./... pass${goMissing}`, { timeout: 300_000 }, async () => {
  const options = { cwd: 'clients/go', env: goEnv };
  expect((await run('gofmt', ['-l', '.'], options)).stdout).toBe('');
  await run('go', ['vet', './...'], options);
  const result = await run('go', ['test', '-count=1', './...'], options).catch((error: { stdout: string; stderr: string }) => error);
  expect(result.stdout + result.stderr, result.stdout + result.stderr).toMatch(/^ok\s+\S+svc-gateway-go\s/m);
});
