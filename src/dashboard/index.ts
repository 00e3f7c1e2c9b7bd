import type { FastifyInstance } from 'fastify';
import { refusalAnswer, requestReadingStatus } from '../api/httpErrors.ts';
import { registerAssets } from './assets.ts';
import { errorBox } from './forms.ts';
import { html } from './html.ts';
import { renderBarePage } from './layout.ts';
import { PAGE_MODULES } from './pages/index.ts';
import { createDashboardRoutes, type DashboardDeps } from './routes.ts';
import { setPageHeaders } from './security.ts';
import { registerSignIn } from './signIn.ts';
import { parseMultipart } from './multipart.ts';
import { MAX_LOGO_BYTES } from '../accounts/index.ts';

export type { DashboardDeps, DashboardContext, DashboardPageModule, DashboardRoutes, DashboardAnswer } from './routes.ts';

/** Largest urlencoded form body: far above any dashboard form, far below the API's JSON limit. */
const FORM_BODY_LIMIT = 16 * 1024;
/** Largest upload (Settings › Brand's logo form): the logo's own limit and room for the form's other fields and part headers. */
const UPLOAD_BODY_LIMIT = MAX_LOGO_BYTES + 16 * 1024;

/**
 * The merchant dashboard under `/dashboard` (issue 15), served by the api role: server-rendered
 * HTML with htmx, signed in with a session cookie (never an API key). See src/dashboard/README.md
 * for how pages are written and docs/dashboard.md for the security decisions.
 */
/**
 * A request path as logs may show it: no query, and no sign-in link token (`/dashboard/link/<token>`
 * is a credential for 30 minutes; logs go to people and services that must not sign in).
 */
export function loggablePath(url: string): string {
  return url.split('?')[0]!.replace(/^\/dashboard\/link\/[^/]+/, '/dashboard/link/[redacted]');
}

export function registerDashboard(parent: FastifyInstance, deps: DashboardDeps): void {
  const https = deps.config.publicUrl.startsWith('https:');
  parent.register(
    async (app) => {
      app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
        // Own-property object without a prototype: a field named __proto__ is just a field.
        const fields: Record<string, string> = Object.create(null);
        for (const [name, value] of new URLSearchParams(body as string)) fields[name] = value;
        done(null, fields);
      });
      app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit: UPLOAD_BODY_LIMIT }, (request, body, done) => {
        try {
          done(null, parseMultipart(body as Buffer, request.headers['content-type']));
        } catch (error) {
          done(error as Error, undefined);
        }
      });
      // Dashboard errors are pages, not the API's JSON: a refusal shows its message, a request
      // fastify could not read (a form over the limit: 413) its status and what to do, anything
      // else a generic page (logged: a 500 is a bug).
      app.setErrorHandler((error, request, reply) => {
        const refusal = refusalAnswer(error);
        const unreadable = refusal ? undefined : requestReadingStatus(error);
        if (!refusal && !unreadable)
          request.log.error({ msg: 'Unhandled error in dashboard request', err: error, method: request.method, url: loggablePath(request.url) });
        setPageHeaders(reply, { https });
        const status = refusal?.status ?? unreadable ?? 500;
        const message =
          refusal?.body.error ??
          (unreadable === 413
            ? request.headers['content-type']?.startsWith('multipart/form-data')
              ? `this file is larger than the dashboard accepts (a logo may be at most ${MAX_LOGO_BYTES / 1024} KiB); choose a smaller one`
              : `this form is larger than the dashboard accepts (${FORM_BODY_LIMIT / 1024} KiB); shorten what you entered and send it again`
            : unreadable
              ? 'this form could not be read; reload the page and send it again'
              : 'something went wrong on our side; try again, and tell the operator if it keeps happening');
        return reply
          .status(status)
          .type('text/html; charset=utf-8')
          .send(renderBarePage({ title: 'Error', body: html`${errorBox(message)}<p><a href="/dashboard">Back to the dashboard</a></p>` }));
      });
      app.setNotFoundHandler((request, reply) => {
        setPageHeaders(reply, { https });
        return reply
          .status(404)
          .type('text/html; charset=utf-8')
          .send(
            renderBarePage({
              title: 'Not found',
              body: html`${errorBox(`no dashboard page ${request.url.split('?')[0]}`)}<p><a href="/dashboard">Back to the dashboard</a></p>`,
            }),
          );
      });
      registerAssets(app);
      registerSignIn(app, deps);
      const routes = createDashboardRoutes(app, deps);
      for (const register of PAGE_MODULES) register(routes, deps);
    },
    { prefix: '/dashboard' },
  );
}
