import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { useDaemon } from '../helpers/clientDaemon.ts';
import { goEnv, goMissing, hasGo } from '../helpers/toolchains.ts';

const run = promisify(execFile);
const daemon = useDaemon('clients_e2e_go');
const buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-client-go-'));
afterAll(() => fs.rmSync(buildDir, { recursive: true, force: true }));

test.skipIf(!hasGo)(
  `the Go quick start against a real daemon: create a sandbox session, list it, pay it, receive its webhooks on a Go receiver and verify them with svcgateway${goMissing}`,
  { timeout: 300_000 },
  async () => {
    // Built first (the build may take a while on a busy machine), then run with the quick start's own 30 s budget.
    const binary = path.join(buildDir, 'quickstart');
    await run('go', ['build', '-o', binary, './examples/quickstart'], { cwd: 'clients/go', env: goEnv });
    const { stdout } = await run(binary, [], {
      env: { ...goEnv, SVC_API_KEY: daemon.testKey, SVC_WEBHOOK_SECRET: daemon.webhookSecret, SVC_BASE_URL: daemon.baseUrl },
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
