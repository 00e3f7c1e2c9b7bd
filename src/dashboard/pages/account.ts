import QRCode from 'qrcode';
import {
  beginTotp,
  changeDashboardPassword,
  confirmTotp,
  disableTotp,
  forgiveSignInAttempt,
  getDashboardUserSecrets,
  markPasswordEntered,
  MIN_PASSWORD_LENGTH,
  takeSignInAttempt,
  verifyPassword,
} from '../../accounts/index.ts';
import { badRequest } from '../../internal/errors.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule, type DashboardDeps } from '../routes.ts';

const NOTICES: Record<string, string> = {
  password: 'Your password is changed. Every other session of yours has ended.',
  'two-factor-on': 'Two-factor sign-in is on. You will be asked for a code when you sign in.',
  'two-factor-off': 'Two-factor sign-in is off.',
};

function accountBody(ctx: DashboardContext, extra: { notice?: string; passwordError?: string; totpSetup?: Html; setupRequired?: boolean }): Html {
  const { user } = ctx;
  return html`${extra.notice ? noticeBox(extra.notice) : ''}
${
  extra.setupRequired
    ? html`<p class="form-error" role="alert">${ctx.merchant.name} requires two-factor sign-in. Set it up below to use the dashboard.</p>`
    : ''
}
<dl class="facts">
  <dt>Email</dt><dd>${user.email}</dd>
  <dt>Role</dt><dd>${user.role}</dd>
  <dt>Merchant</dt><dd>${ctx.merchant.name} <code>${ctx.merchant.id}</code></dd>
  <dt>Two-factor sign-in</dt><dd>${user.totpEnabled ? 'on' : 'off'}</dd>
</dl>

<h2 id="two-factor">Two-factor sign-in</h2>
${
  extra.totpSetup ??
  (user.totpEnabled
    ? html`<form method="post" action="/dashboard/account/two-factor/disable" class="stack">${ctx.csrfField()}
  <p class="help">Sign-in asks for a 6-digit code from your authenticator app.</p>
  <button type="submit" class="danger">Turn off two-factor sign-in</button></form>`
    : html`<form method="post" action="/dashboard/account/two-factor/start" class="stack">${ctx.csrfField()}
  <p class="help">Protect your account with a code from an authenticator app (TOTP) in addition to your password.</p>
  <button type="submit">Set up two-factor sign-in</button></form>`)
}

<h2 id="password">Change password</h2>
<form method="post" action="/dashboard/account/password" class="stack">
  ${extra.passwordError ? errorBox(extra.passwordError) : ''}
  ${ctx.csrfField()}
  <input type="text" name="username" autocomplete="username" value="${user.email}" hidden>
  <label for="current-password">Current password</label>
  <input id="current-password" name="current" type="password" autocomplete="current-password" required>
  <label for="new-password">New password</label>
  <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required aria-describedby="new-password-help">
  <p id="new-password-help" class="help">At least ${MIN_PASSWORD_LENGTH} characters. Your other sessions end when it changes.</p>
  <label for="confirm-password">Repeat the new password</label>
  <input id="confirm-password" name="confirmation" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
  <button type="submit">Change password</button>
</form>`;
}

/** The code form that turns two-factor sign-in on; `error` is a refused code's message. */
function totpConfirmForm(ctx: DashboardContext, error?: string): Html {
  return html`<form method="post" action="/dashboard/account/two-factor/confirm" class="stack">
  ${error ? errorBox(error) : ''}
  ${ctx.csrfField()}
  <label for="totp-code">Code from the app</label>
  <input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" required>
  <button type="submit">Turn on two-factor sign-in</button>
</form>`;
}

/** A new secret (replacing one left pending) shown once as a QR code and key, with the code form. */
async function totpSetupForm(ctx: DashboardContext, deps: DashboardDeps): Promise<Html> {
  const { secret, uri } = await beginTotp(ctx.store, deps.box, ctx.user);
  const qr = await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 4, width: 240 });
  return html`<section class="panel">
<p>Scan this code with your authenticator app, or type the key, then enter the 6-digit code it shows.</p>
<img class="qr" src="${qr}" alt="QR code for your authenticator app" width="240" height="240">
<p>Key: <code id="totp-secret">${secret}</code> <button type="button" class="secondary" data-copy="totp-secret">Copy key</button></p>
${totpConfirmForm(ctx)}</section>`;
}

/**
 * After a refused code: the code form again, never the secret. Showing the pending secret (or
 * making one) here let a stolen cookie enroll its own authenticator; whoever lost the key starts
 * again, which makes a new one.
 */
function totpRetryForm(ctx: DashboardContext, error: string): Html {
  return html`<section class="panel">
<p>Enter the current code of the app you set up.</p>
${totpConfirmForm(ctx, error)}
<form method="post" action="/dashboard/account/two-factor/start" class="stack">${ctx.csrfField()}
  <p class="help">Did not add the key to your app? Start again with a new key.</p>
  <button type="submit" class="secondary">Start again</button></form></section>`;
}

/**
 * Your account: change password (current one checked through the sign-in throttle), two-factor
 * sign-in set up with a QR code (otplib, qrcode) and turned off. Reachable while the merchant's
 * two-factor requirement is still unmet, so a user can meet it.
 */
export const accountPage: DashboardPageModule = (routes, deps) => {
  const options = { nav: 'account', duringTotpSetup: true } as const;
  const mustSetUp = (ctx: DashboardContext) => ctx.merchant.requireTotp && !ctx.user.totpEnabled;

  routes.get('/account', options, async (ctx, request) => {
    const notice = NOTICES[request.query.done ?? ''];
    return page('Your account', accountBody(ctx, { ...(notice ? { notice } : {}), setupRequired: mustSetUp(ctx) }));
  });

  routes.post('/account/password', options, async (ctx, request) => {
    const result = await tryForm(async () => {
      await takeSignInAttempt(ctx.store, { email: ctx.user.email, ip: ctx.ip, userIds: [ctx.user.id] });
      const secrets = await getDashboardUserSecrets(ctx.store, ctx.user.id);
      if (!(await verifyPassword(request.body.current ?? '', secrets?.passwordHash))) throw badRequest('the current password is not right');
      await forgiveSignInAttempt(ctx.store, { ip: ctx.ip, userId: ctx.user.id });
      await changeDashboardPassword(ctx.store, {
        user: ctx.user,
        password: request.body.password ?? '',
        confirmation: request.body.confirmation ?? '',
        keepSessionId: ctx.session.id,
        actor: ctx.actor,
      });
      await markPasswordEntered(ctx.store, ctx.session.id);
    });
    if (!result.ok) return page('Your account', accountBody(ctx, { passwordError: result.error, setupRequired: mustSetUp(ctx) }), { status: 400 });
    return redirect('/dashboard/account?done=password');
  });

  routes.post('/account/two-factor/start', { ...options, recentPassword: true }, async (ctx) =>
    page('Your account', accountBody(ctx, { totpSetup: await totpSetupForm(ctx, deps), setupRequired: mustSetUp(ctx) })),
  );

  // Turning it on wants the recent password too: the start alone left a way round it (a stolen
  // cookie confirming a secret the owner left pending).
  routes.post('/account/two-factor/confirm', { ...options, recentPassword: true }, async (ctx, request) => {
    const result = await tryForm(() => confirmTotp(ctx.store, deps.box, { user: ctx.user, code: field(request.body, 'code'), actor: ctx.actor }));
    if (!result.ok) {
      return page('Your account', accountBody(ctx, { totpSetup: totpRetryForm(ctx, result.error), setupRequired: mustSetUp(ctx) }), {
        status: result.status,
      });
    }
    return redirect('/dashboard/account?done=two-factor-on');
  });

  routes.post('/account/two-factor/disable', { ...options, recentPassword: true }, async (ctx) => {
    await disableTotp(ctx.store, { user: ctx.user, actor: ctx.actor });
    return redirect('/dashboard/account?done=two-factor-off');
  });
};
