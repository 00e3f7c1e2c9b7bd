import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  checkTotpCode,
  countSignInAttempt,
  createDashboardSession,
  findDashboardSession,
  findDashboardUsersForSignIn,
  findSignInLink,
  forgiveSignInAttempt,
  recordAudit,
  takeSignInAttempt,
  useSignInLink,
  verifyPassword,
  checkNewPassword,
  MIN_PASSWORD_LENGTH,
  type DashboardUser,
  type SignInCandidate,
} from '../accounts/index.ts';
import { randomBase62 } from '../internal/crypto.ts';
import { refusalAnswer } from '../api/httpErrors.ts';
import { html, type Html } from './html.ts';
import { renderBarePage } from './layout.ts';
import { errorBox, field, noticeBox } from './forms.ts';
import { cookieNames, csrfTokenMatches, isSameOriginRequest, readCookie, serializeCookie, setPageHeaders } from './security.ts';
import type { DashboardDeps } from './routes.ts';

type FormRequest = FastifyRequest<{
  Body: Record<string, string | undefined> | undefined;
  Querystring: Record<string, string | undefined>;
  Params: { token: string };
}>;

/** Where to go after signing in: a dashboard path the sign-in page was given, never another site. */
export function safeNext(next: string | undefined): string {
  return next && /^\/dashboard(\/[\w\-./?=&%]*)?$/.test(next) && !next.includes('//') ? next : '/dashboard';
}

const GENERIC_REFUSAL = 'wrong email or password (or this account is disabled)';

/**
 * The pages for people not signed in: sign-in (email, password, then a TOTP code when the user
 * has one) and the single-use sign-in link that sets a password. Their forms are protected
 * against login CSRF by a pre-session token (a cookie and the same value in the form) and the
 * Origin / Sec-Fetch-Site check; password and code attempts go through the Postgres sign-in
 * throttle (per account and per IP).
 */
export function registerSignIn(app: FastifyInstance, deps: DashboardDeps): void {
  const https = deps.config.publicUrl.startsWith('https:');
  const names = cookieNames(https);
  const routeConfig = { config: { auth: 'none' as const, rateLimit: 'dashboard' as const }, schema: { hide: true } as never };

  /** The pre-session token: the cookie's value, set now if the browser has none. */
  function preSessionToken(request: FastifyRequest, reply: FastifyReply): string {
    const existing = readCookie(request, names.preSession);
    if (existing && /^[0-9A-Za-z]{32}$/.test(existing)) return existing;
    const token = randomBase62(32);
    reply.header('Set-Cookie', serializeCookie(names.preSession, token, { https }));
    return token;
  }

  function bare(reply: FastifyReply, title: string, body: Html, status = 200): FastifyReply {
    setPageHeaders(reply, { https });
    return reply.status(status).type('text/html; charset=utf-8').send(renderBarePage({ title, body }));
  }

  /** Refuses a form that did not come from our own page (login CSRF); undefined when it did. */
  function refuseForeign(request: FormRequest): string | undefined {
    if (!isSameOriginRequest(request, deps.config.publicUrl)) return 'this form was sent from another site';
    if (!csrfTokenMatches(field(request.body, '_csrf'), readCookie(request, names.preSession) ?? '')) {
      return 'this form is out of date or your browser refused its cookie; reload the page and try again';
    }
    return undefined;
  }

  async function startSession(request: FastifyRequest, reply: FastifyReply, user: DashboardUser, next: string): Promise<FastifyReply> {
    const { token } = await createDashboardSession(deps.store, { userId: user.id, ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
    await recordAudit(deps.store, {
      merchantId: user.merchantId,
      actor: { userId: user.id, label: user.email, ip: request.ip },
      action: 'user.signed_in',
      target: user.id,
    });
    setPageHeaders(reply, { https });
    reply.header('Set-Cookie', serializeCookie(names.session, token, { https }));
    return reply.redirect(safeNext(next), 303);
  }

  interface SignInFormParams {
    csrf: string;
    email?: string;
    next: string;
    error?: string;
    notice?: string;
    askCode?: boolean;
    /** The merchant chosen (kept while the code is asked for). */
    merchant?: string;
    /** One password opened several merchants: which one to sign in to. */
    choices?: SignInCandidate[];
  }

  function signInForm(params: SignInFormParams): Html {
    return html`<form method="post" action="/dashboard/sign-in" class="stack" novalidate>
  ${params.notice ? noticeBox(params.notice) : ''}
  ${params.error ? errorBox(params.error) : ''}
  <input type="hidden" name="_csrf" value="${params.csrf}">
  <input type="hidden" name="next" value="${params.next}">
  ${params.merchant && !params.choices ? html`<input type="hidden" name="merchant" value="${params.merchant}">` : ''}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${params.email ?? ''}"${params.askCode || params.choices ? '' : html` autofocus`}>
  ${
    params.choices
      ? html`<label for="merchant">Merchant</label>
  <select id="merchant" name="merchant" required autofocus>${params.choices.map(
    (choice) => html`<option value="${choice.user.merchantId}">${choice.merchantName} (${choice.user.merchantId})</option>`,
  )}</select>`
      : ''
  }
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  ${
    params.askCode
      ? html`<label for="code">Two-factor code</label>
  <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" required autofocus aria-describedby="code-help">
  <p id="code-help" class="help">The 6-digit code from your authenticator app.</p>`
      : ''
  }
  <button type="submit">Sign in</button>
</form>`;
  }

  /**
   * The users the email and password open. The attempt is counted against every user of the
   * email (or of the chosen merchant), then each one not over its limit is checked, one scrypt
   * each (one when there is none, so an unknown email costs the same). Disabled users never
   * match. Nothing opened while some user was locked is a 429, as for one user.
   */
  async function usersOpenedBy(params: { email: string; password: string; merchant: string; ip: string }): Promise<SignInCandidate[]> {
    const found = await findDashboardUsersForSignIn(deps.store, params.email);
    const candidates = params.merchant ? found.filter((candidate) => candidate.user.merchantId === params.merchant) : found;
    const count = await countSignInAttempt(deps.store, { email: params.email, ip: params.ip, userIds: candidates.map((candidate) => candidate.user.id) });
    if (count.refusal) throw count.refusal;
    const open = candidates.filter((candidate) => !count.locked.includes(candidate.user.id));
    if (open.length === 0) await verifyPassword(params.password, undefined);
    const opened: SignInCandidate[] = [];
    for (const candidate of open) {
      if ((await verifyPassword(params.password, candidate.secrets.passwordHash)) && !candidate.user.disabledAt) opened.push(candidate);
    }
    if (opened.length === 0 && count.lockedRefusal) throw count.lockedRefusal;
    return opened;
  }

  app.get<{ Querystring: Record<string, string | undefined> }>('/sign-in', routeConfig, async (request, reply) => {
    const token = readCookie(request, names.session);
    if (token && (await findDashboardSession(deps.store, token))) {
      setPageHeaders(reply, { https });
      return reply.redirect(safeNext(request.query.next), 303);
    }
    const csrf = preSessionToken(request, reply);
    const notice = request.query.ended ? 'Your session ended. Sign in again.' : request.query.out ? 'You are signed out.' : undefined;
    return bare(reply, 'Sign in', signInForm({ csrf, next: safeNext(request.query.next), ...(notice ? { notice } : {}) }));
  });

  app.post('/sign-in', routeConfig, async (request: FormRequest, reply) => {
    const csrf = preSessionToken(request, reply);
    const email = field(request.body, 'email');
    const next = safeNext(field(request.body, 'next'));
    const again = (error: string, status: number, askCode = false) => bare(reply, 'Sign in', signInForm({ csrf, email, next, error, askCode }), status);
    const foreign = refuseForeign(request);
    if (foreign) return again(foreign, 403);
    const password = request.body?.password ?? '';
    const code = field(request.body, 'code');
    const merchant = field(request.body, 'merchant');
    if (!email || !password) return again('enter your email and password', 400);
    let opened: SignInCandidate[];
    try {
      opened = await usersOpenedBy({ email, password, merchant, ip: request.ip });
    } catch (error) {
      const refusal = refusalAnswer(error);
      if (!refusal) throw error;
      for (const [name, value] of Object.entries(refusal.headers)) reply.header(name, value);
      return again(refusal.body.error, refusal.status);
    }
    if (opened.length === 0) return again(GENERIC_REFUSAL, 401);
    if (opened.length > 1) {
      // One email and password open users of several merchants: the person picks one.
      for (const candidate of opened) await forgiveSignInAttempt(deps.store, { ip: request.ip, userId: candidate.user.id }, { undoOnly: true });
      const error = 'this email and password open more than one merchant: choose one and enter the password again';
      return bare(reply, 'Sign in', signInForm({ csrf, email, next, error, choices: opened }), 401);
    }
    const { user } = opened[0]!;
    const attempt = { ip: request.ip, userId: user.id };
    if (user.totpEnabled) {
      const askCode = (error: string) => bare(reply, 'Sign in', signInForm({ csrf, email, next, error, askCode: true, merchant: user.merchantId }), 401);
      // The password was right: ask for the code without counting a failure for its absence.
      if (!code) {
        await forgiveSignInAttempt(deps.store, attempt, { undoOnly: true });
        return askCode('enter the code from your authenticator app');
      }
      if (!(await checkTotpCode(deps.store, deps.box, { userId: user.id, code }))) return askCode('that two-factor code is not right (or was already used)');
    }
    await forgiveSignInAttempt(deps.store, attempt);
    return startSession(request, reply, user, next);
  });

  function setPasswordForm(params: { token: string; csrf: string; user: DashboardUser; error?: string }): Html {
    return html`<form method="post" action="/dashboard/link/${params.token}" class="stack">
  <p>Signing in as <strong>${params.user.email}</strong> (${params.user.role}). Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.</p>
  ${params.error ? errorBox(params.error) : ''}
  <input type="hidden" name="_csrf" value="${params.csrf}">
  <input type="text" name="username" autocomplete="username" value="${params.user.email}" hidden>
  <label for="password">New password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required autofocus>
  <label for="confirmation">Repeat the password</label>
  <input id="confirmation" name="confirmation" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
  ${
    params.user.totpEnabled
      ? html`<label for="code">Two-factor code</label>
  <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" required aria-describedby="code-help">
  <p id="code-help" class="help">A sign-in link does not skip your second factor: the 6-digit code from your authenticator app. Lost the device? Ask an owner to reset your two-factor sign-in (Team).</p>`
      : ''
  }
  <button type="submit">Set password and sign in</button>
</form>`;
  }

  const linkRefused = (reply: FastifyReply, message: string, status: number) =>
    bare(reply, 'Sign-in link', html`${errorBox(message)}<p><a href="/dashboard/sign-in">Go to sign-in</a></p>`, status);

  app.get('/link/:token', routeConfig, async (request: FormRequest, reply) => {
    const csrf = preSessionToken(request, reply);
    try {
      // Looking at the link does not use it (mail scanners and previews open links): only the form's POST does.
      const user = await findSignInLink(deps.store, request.params.token);
      return bare(reply, 'Set your password', setPasswordForm({ token: request.params.token, csrf, user }));
    } catch (error) {
      const refusal = refusalAnswer(error);
      if (!refusal) throw error;
      return linkRefused(reply, refusal.body.error, refusal.status);
    }
  });

  app.post('/link/:token', routeConfig, async (request: FormRequest, reply) => {
    const csrf = preSessionToken(request, reply);
    const { token } = request.params;
    const foreign = refuseForeign(request);
    if (foreign) return linkRefused(reply, foreign, 403);
    try {
      // A link sets a password; it never skips the user's second factor. The code is checked
      // (and counted by the sign-in throttle) before the link is used, after the new password's
      // own checks so a mistyped confirmation does not spend the code.
      const linked = await findSignInLink(deps.store, token);
      if (linked.totpEnabled) {
        checkNewPassword(request.body?.password ?? '', request.body?.confirmation ?? '');
        const code = field(request.body, 'code');
        const askAgain = (error: string) => bare(reply, 'Set your password', setPasswordForm({ token, csrf, user: linked, error }), 401);
        if (!code) return askAgain('enter the code from your authenticator app');
        await takeSignInAttempt(deps.store, { email: linked.email, ip: request.ip, userIds: [linked.id] });
        if (!(await checkTotpCode(deps.store, deps.box, { userId: linked.id, code })))
          return askAgain('that two-factor code is not right (or was already used)');
        await forgiveSignInAttempt(deps.store, { ip: request.ip, userId: linked.id });
      }
      const user = await useSignInLink(deps.store, {
        token,
        password: request.body?.password ?? '',
        confirmation: request.body?.confirmation ?? '',
        ip: request.ip,
      });
      return startSession(request, reply, user, '/dashboard');
    } catch (error) {
      const refusal = refusalAnswer(error);
      if (!refusal) throw error;
      if (refusal.status !== 400) return linkRefused(reply, refusal.body.error, refusal.status);
      const user = await findSignInLink(deps.store, token).catch(() => undefined);
      if (!user) return linkRefused(reply, refusal.body.error, 410);
      return bare(reply, 'Set your password', setPasswordForm({ token, csrf, user, error: refusal.body.error }), 400);
    }
  });
}
