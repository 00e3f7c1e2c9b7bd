import fs from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { verifyWebhook as referenceVerify } from '../../src/index.ts';
import { constructWebhookEvent, verifyWebhook as nodeVerify } from '../../clients/node/src/index.ts';
import type { WebhookVector } from '../../clients/scripts/webhook-vectors.ts';
import { cargoEnv, cargoMissing, goEnv, goMissing } from '../helpers/toolchains.ts';

const run = promisify(execFile);
const VECTORS_FILE = 'clients/webhook-vectors.json';
const { vectors } = JSON.parse(fs.readFileSync(VECTORS_FILE, 'utf8')) as { vectors: WebhookVector[] };

type Answer = { name: string; ok: true; eventId: string } | { name: string; ok: false; reason: string };
type Verify = (rawBody: Uint8Array, headers: Record<string, string>, secret: string, options: { now: number; livemode?: boolean }) => Promise<{ id: string }>;

/** A TypeScript verifier's answers to every vector. */
async function answersOf(verify: Verify): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (const vector of vectors) {
    const options = { now: vector.now * 1000, ...(vector.livemode === undefined ? {} : { livemode: vector.livemode }) };
    try {
      const event = await verify(Buffer.from(vector.body, 'utf8'), vector.headers, vector.secret, options);
      answers.push({ name: vector.name, ok: true, eventId: event.id });
    } catch (error) {
      answers.push({ name: vector.name, ok: false, reason: (error as { reason: string }).reason });
    }
  }
  return answers;
}

/**
 * Every verifier, by language. Each answers every vector of clients/webhook-vectors.json; a
 * library in another language adds its runner here (a program printing its answers as JSON).
 * The compiled languages' runners are examples of their libraries (built by their own
 * toolchains); `missing` says why one cannot run on this machine.
 */
const VERIFIERS: Record<string, { answers: () => Promise<Answer[]>; missing?: string }> = {
  'daemon reference (src, verifyWebhook)': { answers: () => answersOf(referenceVerify) },
  'node (@svc/gateway)': { answers: () => answersOf(nodeVerify) },
  'node, synchronous (@svc/gateway constructWebhookEvent)': { answers: () => answersOf(async (...args) => constructWebhookEvent(...args)) },
  'python (svc_gateway)': {
    answers: async () =>
      JSON.parse(
        (await run('python3', ['test/clients/verifiers/python_vectors.py', VECTORS_FILE], { env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } })).stdout,
      ) as Answer[],
  },
  'go (svcgateway)': {
    answers: async () =>
      JSON.parse((await run('go', ['run', './examples/webhookvectors', `../../${VECTORS_FILE}`], { cwd: 'clients/go', env: goEnv })).stdout) as Answer[],
    missing: goMissing,
  },
  'rust (svc_gateway)': {
    answers: async () =>
      JSON.parse(
        (
          await run('cargo', ['run', '--offline', '--quiet', '--example', 'webhook_vectors', '--', `../../${VECTORS_FILE}`], {
            cwd: 'clients/rust',
            env: cargoEnv,
          })
        ).stdout,
      ) as Answer[],
    missing: cargoMissing,
  },
};

describe('every webhook verifier gives the same answer to every shared vector', () => {
  const expected = vectors.map((vector) => ({ name: vector.name, ...vector.expect }));

  test('the vectors cover the cases the clients promise', () => {
    const names = vectors.map((vector) => vector.name);
    for (const name of [
      'valid',
      'tampered_body',
      'old_timestamp',
      'missing_signature',
      'missing_timestamp',
      'missing_nonce',
      'rotated_old_secret',
      'rotated_new_secret',
      'wrong_mode',
      'malformed_body',
    ]) {
      expect(names).toContain(name);
    }
    expect(new Set(vectors.map((vector) => (vector.expect.ok ? 'ok' : vector.expect.reason)))).toEqual(
      new Set(['ok', 'signature_mismatch', 'timestamp_out_of_tolerance', 'missing_header', 'malformed_header', 'livemode_mismatch', 'malformed_body']),
    );
  });

  for (const [name, verifier] of Object.entries(VERIFIERS)) {
    test.skipIf(Boolean(verifier.missing))(`${name}${verifier.missing ?? ''}`, { timeout: 600_000 }, async () => {
      expect(await verifier.answers()).toEqual(expected);
    });
  }
});
