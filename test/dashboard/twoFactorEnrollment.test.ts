import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { generate } from 'otplib';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';

/**
 * Turning two-factor sign-in on (issue 24): the confirming step wants the recent password like
 * the start does, and a wrong code never shows or makes a secret. Before, a stolen cookie past
 * its re-authentication window posted a wrong code to /confirm, got a fresh secret on the error
 * page, and enrolled its own authenticator with the next post.
 */
const db = useTestDatabase('dashboard_two_factor_enrollment');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

const secretIn = (body: string) => /id="totp-secret">([A-Z2-7]+)</.exec(body)?.[1];
const totpRow = async (userId: string) =>
  (await db.store.query('SELECT totp_secret_sealed, totp_enabled_at FROM dashboard_users WHERE id = $1', [userId])).rows[0] as {
    totp_secret_sealed: string | null;
    totp_enabled_at: Date | null;
  };
const staleReauth = (userId: string) => db.store.query(`UPDATE dashboard_sessions SET reauth_at = now() - interval '11 minutes' WHERE user_id = $1`, [userId]);

describe('two-factor enrollment', () => {
  test('a stolen cookie past the re-authentication window cannot confirm: it gets the password prompt, no secret, and nothing is stored', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const attacker = await signedInClient(app, owner.email);
    await staleReauth(owner.id);
    const wrong = await attacker.post('/dashboard/account/two-factor/confirm', { code: '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('data-reauth');
    expect(secretIn(wrong.body)).toBeUndefined();
    expect(wrong.body).not.toContain('otpauth');
    expect(await totpRow(owner.id)).toEqual({ totp_secret_sealed: null, totp_enabled_at: null });
    // Nor a secret the owner left pending (started earlier, never confirmed).
    const ownerClient = await signedInClient(app, owner.email);
    const pending = secretIn((await ownerClient.post('/dashboard/account/two-factor/start')).body)!;
    await staleReauth(owner.id);
    const again = await attacker.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret: pending }) });
    expect(again.status).toBe(401);
    expect(again.body).not.toContain(pending);
    expect((await totpRow(owner.id)).totp_enabled_at).toBeNull();
    // The prompt replays the code with the password, and the owner's own confirmation goes through.
    expect(again.body).toContain('name="code"');
    const confirmed = await ownerClient.post('/dashboard/account/two-factor/confirm', {
      code: await generate({ secret: pending }),
      _reauth_password: TEST_PASSWORD,
    });
    expect(confirmed.status).toBe(303);
    expect((await totpRow(owner.id)).totp_enabled_at).not.toBeNull();
  });

  test('a wrong code with a recent password neither shows the pending secret nor makes one', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    // No setup started: a wrong code creates no secret.
    const none = await client.post('/dashboard/account/two-factor/confirm', { code: '000000' });
    expect(none.status).toBe(409);
    expect(secretIn(none.body)).toBeUndefined();
    expect(await totpRow(owner.id)).toEqual({ totp_secret_sealed: null, totp_enabled_at: null });

    const started = await client.post('/dashboard/account/two-factor/start');
    const secret = secretIn(started.body)!;
    const sealed = (await totpRow(owner.id)).totp_secret_sealed;
    const wrong = await client.post('/dashboard/account/two-factor/confirm', { code: '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('that code does not match');
    expect(wrong.body).not.toContain(secret);
    expect(wrong.body).not.toContain('otpauth');
    expect(wrong.body).not.toContain('data:image/png');
    // The form to try again is there, and the pending secret is the same one.
    expect(wrong.body).toContain('action="/dashboard/account/two-factor/confirm"');
    expect((await totpRow(owner.id)).totp_secret_sealed).toBe(sealed);
    expect((await client.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret }) })).status).toBe(303);
  });
});
