import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { useDaemon } from '../helpers/clientDaemon.ts';
import { cargoEnv, cargoMissing, hasCargo } from '../helpers/toolchains.ts';

const run = promisify(execFile);
const daemon = useDaemon('clients_e2e_rust');

test.skipIf(!hasCargo)(
  `the Rust quick start against a real daemon: create a sandbox session, list it, pay it, receive its webhooks on a Rust receiver and verify them with svc_gateway${cargoMissing}`,
  { timeout: 600_000 },
  async () => {
    // Built first (the first build on a new machine compiles the dependencies), then run with the quick start's own 30 s budget.
    await run('cargo', ['build', '--offline', '--example', 'quickstart'], { cwd: 'clients/rust', env: cargoEnv, maxBuffer: 16 * 1024 * 1024 });
    const { stdout } = await run('clients/rust/target/debug/examples/quickstart', [], {
      env: { ...cargoEnv, SVC_API_KEY: daemon.testKey, SVC_WEBHOOK_SECRET: daemon.webhookSecret, SVC_BASE_URL: daemon.baseUrl },
      timeout: 40_000,
    }).catch((error: { stdout: string; stderr: string }) => ({ stdout: `${error.stdout}\n${error.stderr}` }));
    const sessionId = /^created (ses_\w+): pay 25(?:\.\d+)? USDC on base to 0x/m.exec(stdout)?.[1];
    expect(sessionId, stdout).toBeDefined();
    expect(stdout).toContain(`listed ${sessionId} status=pending`);
    expect(stdout).toMatch(/^paid 25(?:\.\d+)? in the sandbox, tx 0x[0-9a-f]{64}$/m);
    // The secret the first start printed verified them (the quick start no longer rotates it).
    expect(stdout).toMatch(new RegExp(`^✓ payment\\.confirming evt_\\w+ ${sessionId} status=confirming signature verified$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^✓ payment\\.confirmed evt_\\w+ ${sessionId} status=confirmed signature verified$`, 'm'));
    expect(stdout).not.toContain('✗');
  },
);
