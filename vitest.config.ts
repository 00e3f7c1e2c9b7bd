import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/globalSetup.ts'],
    // Real Postgres, anvil and child processes: seconds, not milliseconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The machines have 2 cores; two files at a time keeps anvil and Postgres responsive.
    maxWorkers: 2,
  },
});
