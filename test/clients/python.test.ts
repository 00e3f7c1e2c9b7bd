import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const run = promisify(execFile);

// The Python library's own tests (clients/python/tests, standard library unittest), so `npm test` runs them.
test('clients/python: python3 -m unittest passes', async () => {
  const result = await run('python3', ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], {
    cwd: 'clients/python',
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  }).catch((error: { code: number; stdout: string; stderr: string }) => error);
  expect(result.stderr, result.stderr).toMatch(/^Ran \d+ tests in [\d.]+s\n\nOK/m);
});
