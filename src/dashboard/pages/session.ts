import { endAllDashboardSessions, endDashboardSession, setSessionLivemode } from '../../accounts/index.ts';
import { field } from '../forms.ts';
import { redirect, type DashboardPageModule } from '../routes.ts';
import { safeNext } from '../signIn.ts';

/** The session's own actions: the mode toggle, the password prompt of pages, sign out, sign out everywhere. */
export const sessionActions: DashboardPageModule = (routes) => {
  routes.post('/mode', { nav: 'home', duringTotpSetup: true }, async (ctx, request) => {
    const livemode = field(request.body, 'livemode') === 'true';
    await setSessionLivemode(ctx.store, ctx.session.id, livemode);
    return redirect(safeNext(field(request.body, 'next')));
  });

  // The target of the password prompt shown for a page (GET): the router checks the password, then back to the page.
  routes.post('/reauth', { nav: 'home', recentPassword: true }, async (_ctx, request) => redirect(safeNext(field(request.body, 'next'))));

  routes.post('/sign-out', { nav: 'home', duringTotpSetup: true }, async (ctx) => {
    await endDashboardSession(ctx.store, ctx.session.id);
    return redirect('/dashboard/sign-in?out=1', { clearSessionCookie: true });
  });

  routes.post('/sign-out-everywhere', { nav: 'home', duringTotpSetup: true }, async (ctx) => {
    const ended = await endAllDashboardSessions(ctx.store, ctx.user.id);
    await ctx.audit('user.signed_out_everywhere', { target: ctx.user.id, details: { sessions: ended }, livemode: null });
    return redirect('/dashboard/sign-in?out=1', { clearSessionCookie: true });
  });
};
