import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  findDashboardSession,
  forgiveSignInAttempt,
  getDashboardUserSecrets,
  markPasswordEntered,
  passwordIsRecent,
  recordAudit,
  requirePermission as checkPermission,
  roleCan,
  takeSignInAttempt,
  verifyPassword,
  type Actor,
  type AuditAction,
  type DashboardSession,
  type DashboardUser,
  type Permission,
  type Role,
} from '../accounts/index.ts';
import type { Merchant } from '../accounts/index.ts';
import { BaseError, forbidden, RateLimitedError } from '../internal/errors.ts';
import type { Store } from '../store/index.ts';
import { refusalAnswer } from '../api/httpErrors.ts';
import type { ApiDeps } from '../api/deps.ts';
import { html, type Html } from './html.ts';
import type { AssetName } from './assets.ts';
import { csrfField, renderLayout, sectionPath, type NavKey } from './layout.ts';
import { cookieNames, csrfTokenMatches, isSameOriginRequest, presentedCsrfToken, readCookie, serializeCookie, setPageHeaders } from './security.ts';
import { errorBox } from './forms.ts';

/** What page modules get besides the context: the API's dependencies (store bounded like the API's). */
export type DashboardDeps = Pick<ApiDeps, 'store' | 'config' | 'logger' | 'box' | 'metrics' | 'sandbox' | 'lookups'>;

/**
 * Everything a page handler needs about who is asking, built per request from the session
 * cookie. Every query a page runs is scoped by `merchant.id` (and `livemode` where data has a
 * mode), so another merchant's ids answer "not found", as in the API.
 */
export interface DashboardContext {
  session: DashboardSession;
  user: DashboardUser;
  merchant: Merchant & { requireTotp: boolean };
  /** The mode toggle: false shows sandbox data, true live data. */
  livemode: boolean;
  csrfToken: string;
  ip: string;
  /** The bounded store of the API: every wait ends in a 503, never a hung page. */
  store: Store;
  /** This user as the audit log names it. */
  actor: Actor;
  /** Whether the user's role has `permission` (to hide a button; the check is {@link requirePermission}). */
  can(permission: Permission): boolean;
  /** Throws a 403 unless the user's role has `permission` (src/accounts/permissions.ts). */
  requirePermission(permission: Permission): void;
  /** Throws a 403 unless the user has one of `roles`; prefer {@link requirePermission}. */
  requireRole(...roles: Role[]): void;
  /**
   * Money-routing actions: throws unless the password was entered in this session in the last
   * 10 minutes. The router then shows a password prompt that re-submits the same form with the
   * password, and the action continues. Call it before changing anything.
   */
  requireRecentPassword(): void;
  /** Appends an audit entry for this merchant, user, IP and mode; pass the transaction's `sql` to commit it with the change. */
  audit(
    action: AuditAction,
    params?: { target?: string; details?: Record<string, unknown>; sql?: Pick<Store, 'query'>; livemode?: boolean | null },
  ): Promise<void>;
  /** The hidden `_csrf` input every form must carry. */
  csrfField(): Html;
}

/** What a handler answers. Build them with {@link page}, {@link fragment}, {@link redirect}, {@link file}. */
export type DashboardAnswer =
  | { kind: 'page'; title: string; body: Html; status?: number; assets?: AssetName[] }
  | { kind: 'fragment'; body: Html; status?: number }
  | { kind: 'redirect'; to: string; clearSessionCookie?: boolean }
  | { kind: 'file'; filename: string; contentType: string; body: string | Buffer }
  | { kind: 'json'; value: unknown };

/** A full page in the layout (title as `<h1>`, the route's nav item current). */
/**
 * A full page in the layout (title as `<h1>`, the route's nav item current). `assets` adds files
 * of assets.ts to its head, e.g. `['uplot.min.js', 'uplot.min.css', 'charts.js']` for charts.
 */
export const page = (title: string, body: Html, options: { status?: number; assets?: AssetName[] } = {}): DashboardAnswer => ({
  kind: 'page',
  title,
  body,
  ...options,
});
/** Markup alone, for htmx swaps (`hx-get`, `hx-post`). */
export const fragment = (body: Html, options: { status?: number } = {}): DashboardAnswer => ({ kind: 'fragment', body, ...options });
/** 303 See Other to a dashboard path (post/redirect/get). */
export const redirect = (to: string, options: { clearSessionCookie?: boolean } = {}): DashboardAnswer => ({ kind: 'redirect', to, ...options });
/** A download (CSV export). */
export const file = (filename: string, contentType: string, body: string | Buffer): DashboardAnswer => ({ kind: 'file', filename, contentType, body });
/**
 * JSON for a page's own script (chart series): the CSP allows fetches to this origin only, and
 * pages carry no inline data scripts. Bigints become decimal text.
 */
export const json = (value: unknown): DashboardAnswer => ({ kind: 'json', value });

export interface RouteOptions {
  /** The nav item shown as current. */
  nav: NavKey;
  /** Checked before the handler runs; default `read`. */
  permission?: Permission;
  /** Every request to this route wants the password entered in the last 10 minutes (see requireRecentPassword). */
  recentPassword?: boolean;
  /** Reachable while the user must still set up two-factor (the merchant requires it): the account page only. */
  duringTotpSetup?: boolean;
}

export type Handler<P> = (
  ctx: DashboardContext,
  request: FastifyRequest<{ Params: P; Querystring: Record<string, string | undefined>; Body: Record<string, string | undefined> }>,
) => Promise<DashboardAnswer>;

/** How a page module adds its routes (paths relative to /dashboard). */
export interface DashboardRoutes {
  get<P = Record<string, string>>(path: string, options: RouteOptions, handler: Handler<P>): void;
  post<P = Record<string, string>>(path: string, options: RouteOptions, handler: Handler<P>): void;
}

/** A page module: `src/dashboard/pages/<name>.ts` exports one, listed in pages/index.ts. */
export type DashboardPageModule = (routes: DashboardRoutes, deps: DashboardDeps) => void;

/** Thrown by requireRecentPassword: the router answers with the password prompt. */
export class RecentPasswordRequiredError extends BaseError {
  override name = 'RecentPasswordRequiredError';
}

/** Form fields the router reads itself and never replays. */
const ROUTER_FIELDS = new Set(['_csrf', '_reauth_password']);

export function isHtmx(request: FastifyRequest): boolean {
  return request.headers['hx-request'] === 'true';
}

/** Registers routes whose handlers get a {@link DashboardContext}, on `app` (the /dashboard plugin). */
export function createDashboardRoutes(app: FastifyInstance, deps: DashboardDeps): DashboardRoutes {
  const https = deps.config.publicUrl.startsWith('https:');
  const names = cookieNames(https);

  async function contextOf(request: FastifyRequest): Promise<DashboardContext | undefined> {
    const token = readCookie(request, names.session);
    const session = token ? await findDashboardSession(deps.store, token) : undefined;
    if (!session) return undefined;
    const actor: Actor = { userId: session.user.id, label: session.user.email, ip: request.ip };
    return {
      session,
      user: session.user,
      merchant: session.merchant,
      livemode: session.livemode,
      csrfToken: session.csrfToken,
      ip: request.ip,
      store: deps.store,
      actor,
      can: (permission) => roleCan(session.user.role, permission),
      requirePermission: (permission) => checkPermission(session.user.role, permission),
      requireRole: (...roles) => {
        if (!roles.includes(session.user.role)) throw forbidden(`this needs the role ${roles.join(' or ')}; yours is ${session.user.role}`);
      },
      requireRecentPassword: () => {
        if (!passwordIsRecent(session)) throw new RecentPasswordRequiredError('enter your password again to continue');
      },
      audit: (action, params = {}) =>
        recordAudit(params.sql ?? deps.store, {
          merchantId: session.merchant.id,
          actor,
          action,
          target: params.target ?? null,
          livemode: params.livemode === undefined ? session.livemode : params.livemode,
          details: params.details ?? {},
        }),
      csrfField: () => csrfField(session.csrfToken),
    };
  }

  function send(reply: FastifyReply, request: FastifyRequest, answer: DashboardAnswer, ctx: DashboardContext | undefined, nav: NavKey): FastifyReply {
    setPageHeaders(reply, { https });
    switch (answer.kind) {
      case 'redirect':
        if (answer.clearSessionCookie) reply.header('Set-Cookie', serializeCookie(names.session, '', { https, maxAgeSeconds: 0 }));
        if (isHtmx(request)) return reply.header('HX-Redirect', answer.to).status(204).send();
        return reply.redirect(answer.to, 303);
      case 'file':
        reply.header('Content-Disposition', `attachment; filename="${answer.filename.replace(/[^\w.-]/g, '_')}"`);
        return reply.type(answer.contentType).send(answer.body);
      case 'json':
        return reply
          .type('application/json; charset=utf-8')
          .send(JSON.stringify(answer.value, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)));
      case 'fragment':
        return reply
          .status(answer.status ?? 200)
          .type('text/html; charset=utf-8')
          .send(answer.body.text);
      case 'page':
        return reply
          .status(answer.status ?? 200)
          .type('text/html; charset=utf-8')
          .send(
            renderLayout(ctx!.session, {
              title: answer.title,
              nav,
              body: answer.body,
              path: request.method === 'GET' ? request.url : sectionPath(nav),
              assets: answer.assets ?? [],
            }),
          );
    }
  }

  /**
   * The password prompt. After a POST it replays the refused form (same URL, same fields) with the
   * password added, so the action continues; after a GET it goes through `POST /dashboard/reauth`
   * and back to the page. A full page, or under htmx the form alone for the request's target.
   */
  function reauthPrompt(ctx: DashboardContext, request: FastifyRequest, message?: string): DashboardAnswer {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const replayed =
      request.method === 'GET'
        ? [html`<input type="hidden" name="next" value="${request.url}">`]
        : Object.entries(body)
            .filter(([name, value]) => !ROUTER_FIELDS.has(name) && typeof value === 'string')
            .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value as string}">`);
    const form = html`<form method="post" action="${request.method === 'GET' ? '/dashboard/reauth' : request.url}" class="stack reauth" data-reauth>
  <p>This changes where money goes or who can move it. Enter your password to continue (asked at most every 10 minutes).</p>
  ${message ? errorBox(message) : ''}
  ${ctx.csrfField()}${replayed}
  <label for="reauth-password">Password</label>
  <input id="reauth-password" name="_reauth_password" type="password" autocomplete="current-password" required autofocus>
  <button type="submit">Continue</button>
  <a href="/dashboard">Cancel</a>
</form>`;
    return isHtmx(request) ? fragment(form, { status: 401 }) : page('Confirm your password', form, { status: 401 });
  }

  /** Checks a `_reauth_password` sent with a replayed form; undefined when it passed. */
  async function checkReauth(ctx: DashboardContext, request: FastifyRequest): Promise<DashboardAnswer | undefined> {
    const password = ((request.body ?? {}) as Record<string, unknown>)._reauth_password;
    if (typeof password !== 'string') return undefined;
    try {
      await takeSignInAttempt(deps.store, { email: ctx.user.email, ip: request.ip, userIds: [ctx.user.id] });
    } catch (error) {
      if (error instanceof RateLimitedError) return reauthPrompt(ctx, request, error.shortMessage);
      throw error;
    }
    const secrets = await getDashboardUserSecrets(deps.store, ctx.user.id);
    if (!(await verifyPassword(password, secrets?.passwordHash))) return reauthPrompt(ctx, request, 'that is not your password');
    await forgiveSignInAttempt(deps.store, { ip: request.ip, userId: ctx.user.id });
    await markPasswordEntered(deps.store, ctx.session.id);
    ctx.session.reauthAt = new Date();
    return undefined;
  }

  function add(method: 'GET' | 'POST', path: string, options: RouteOptions, handler: Handler<never>): void {
    app.route({
      method,
      url: path,
      config: { auth: 'none', rateLimit: 'dashboard' },
      schema: { hide: true } as never,
      handler: async (request, reply) => {
        const ctx = await contextOf(request);
        if (!ctx) {
          setPageHeaders(reply, { https });
          const signIn = `/dashboard/sign-in?next=${encodeURIComponent(request.url)}`;
          if (isHtmx(request)) return reply.header('HX-Redirect', signIn).status(401).send();
          if (method === 'GET') return reply.redirect(signIn, 303);
          return reply.redirect('/dashboard/sign-in?ended=1', 303);
        }
        try {
          if (method === 'POST') {
            if (!isSameOriginRequest(request, deps.config.publicUrl))
              throw forbidden('this form was sent from another site; reload the dashboard and try again');
            if (!csrfTokenMatches(presentedCsrfToken(request), ctx.csrfToken))
              throw forbidden('this form is out of date (its security token does not match your session); reload the page and try again');
          }
          if (ctx.merchant.requireTotp && !ctx.user.totpEnabled && !options.duringTotpSetup) {
            if (method === 'GET') return send(reply, request, redirect('/dashboard/account?setup=two-factor'), ctx, options.nav);
            throw forbidden('this merchant requires two-factor sign-in: set it up under Your account first');
          }
          checkPermission(ctx.user.role, options.permission ?? 'read');
          if (method === 'POST') {
            const refused = await checkReauth(ctx, request);
            if (refused) return send(reply, request, refused, ctx, options.nav);
          }
          if (options.recentPassword) ctx.requireRecentPassword();
          return send(reply, request, await (handler as Handler<unknown>)(ctx, request as never), ctx, options.nav);
        } catch (error) {
          if (error instanceof RecentPasswordRequiredError) return send(reply, request, reauthPrompt(ctx, request), ctx, options.nav);
          const refusal = refusalAnswer(error);
          if (!refusal) throw error;
          for (const [name, value] of Object.entries(refusal.headers)) reply.header(name, value);
          const box = errorBox(refusal.body.error);
          const answer = isHtmx(request) ? fragment(box, { status: refusal.status }) : page(refusalTitle(refusal.status), box, { status: refusal.status });
          return send(reply, request, answer, ctx, options.nav);
        }
      },
    });
  }

  return {
    get: (path, options, handler) => add('GET', path, options, handler as Handler<never>),
    post: (path, options, handler) => add('POST', path, options, handler as Handler<never>),
  };
}

function refusalTitle(status: number): string {
  if (status === 403) return 'Not allowed';
  if (status === 404) return 'Not found';
  if (status === 429) return 'Too many attempts';
  return 'That did not work';
}
