import {
  disableDashboardUser,
  inviteDashboardUser,
  listDashboardUsers,
  reissueSignInLink,
  resetTotp,
  ROLES,
  setDashboardUserRole,
  setRequireTotp,
  signInLinkUrl,
  type DashboardUser,
} from '../../accounts/index.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { timeCell } from '../format.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';

const ROLE_HELP: Record<string, string> = {
  owner: 'everything, including users, wallets and live keys',
  developer: 'test keys, webhooks, sandbox, payment links',
  viewer: 'reads only',
};

const NOTICES: Record<string, string> = {
  role: 'Role changed.',
  disabled: 'User disabled; their sessions have ended.',
  'two-factor': 'Two-factor setting saved.',
  'two-factor-reset': 'Two-factor sign-in turned off for that user; they set up a new device at their next sign-in (or when the merchant requires it).',
};

function status(user: DashboardUser): string {
  if (user.disabledAt) return 'disabled';
  return user.hasPassword ? 'active' : 'invited';
}

function userRow(ctx: DashboardContext, user: DashboardUser): Html {
  const self = user.id === ctx.user.id;
  const base = `/dashboard/team/${encodeURIComponent(user.id)}`;
  return html`<tr id="${user.id}">
<td>${user.email}${self ? html` <span class="badge">you</span>` : ''}</td>
<td>${
    user.disabledAt
      ? user.role
      : html`<form method="post" action="${base}/role" class="inline">${ctx.csrfField()}
  <label class="sr-only" for="role-${user.id}">Role of ${user.email}</label>
  <select id="role-${user.id}" name="role">${ROLES.map((role) => html`<option value="${role}"${role === user.role ? html` selected` : ''}>${role}</option>`)}</select>
  <button type="submit" class="secondary">Change<span class="sr-only"> role of ${user.email}</span></button></form>`
  }</td>
<td>${status(user)}</td>
<td>${user.totpEnabled ? 'on' : 'off'}</td>
<td>${timeCell(user.createdAt)}</td>
<td>${
    user.disabledAt
      ? ''
      : html`<div class="inline"><form method="post" action="${base}/link">${ctx.csrfField()}<button type="submit" class="secondary">New sign-in link<span class="sr-only"> for ${user.email}</span></button></form>
${
  user.totpEnabled && !self
    ? html`<form method="post" action="${base}/two-factor/reset" data-confirm="Turn two-factor sign-in off for ${user.email}? Do it only when they lost their device.">${ctx.csrfField()}<button type="submit" class="secondary">Reset two-factor<span class="sr-only"> of ${user.email}</span></button></form>
`
    : ''
}<form method="post" action="${base}/disable" data-confirm="Disable ${user.email}? Their sessions end at once.">${ctx.csrfField()}<button type="submit" class="danger">Disable<span class="sr-only"> ${user.email}</span></button></form></div>`
  }</td>
</tr>`;
}

async function teamBody(
  ctx: DashboardContext,
  extra: { notice?: string; error?: string; invite?: { email?: string; role?: string }; link?: { url: string; email: string; expiresAt: Date } } = {},
): Promise<Html> {
  const users = await listDashboardUsers(ctx.store, ctx.merchant.id);
  return html`${extra.notice ? noticeBox(extra.notice) : ''}${extra.error ? errorBox(extra.error) : ''}
${
  extra.link
    ? html`<section class="panel" aria-labelledby="link-title">
<h2 id="link-title">Sign-in link for ${extra.link.email}</h2>
<p>Send it to them yourself (the gateway sends no email). It works once, until ${timeCell(extra.link.expiresAt)}.</p>
<code class="secret" id="sign-in-link">${extra.link.url}</code>
<button type="button" class="secondary" data-copy="sign-in-link">Copy link</button>
</section>`
    : ''
}
<h2>Users</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table>
<caption class="sr-only">Dashboard users of ${ctx.merchant.name}</caption>
<thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Two-factor</th><th scope="col">Added</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${users.map((user) => userRow(ctx, user))}</tbody>
</table></div>

<h2>Invite someone</h2>
<form method="post" action="/dashboard/team/invite" class="stack" id="invite">
  ${ctx.csrfField()}
  <label for="invite-email">Email</label>
  <input id="invite-email" name="email" type="email" required value="${extra.invite?.email ?? ''}">
  <label for="invite-role">Role</label>
  <select id="invite-role" name="role">${ROLES.map(
    (role) => html`<option value="${role}"${role === (extra.invite?.role ?? 'developer') ? html` selected` : ''}>${role}: ${ROLE_HELP[role]}</option>`,
  )}</select>
  <button type="submit">Create sign-in link</button>
</form>

<h2>Two-factor sign-in</h2>
<form method="post" action="/dashboard/team/two-factor" class="stack">
  ${ctx.csrfField()}
  <label><input type="checkbox" name="required" value="1"${ctx.merchant.requireTotp ? html` checked` : ''}> Require two-factor sign-in for everyone at ${ctx.merchant.name}</label>
  <p class="help">Users without it must set it up before they can use the dashboard.</p>
  <button type="submit">Save</button>
</form>`;
}

/**
 * Team (owners): invite a user (the sign-in link shown to copy), change a role, hand out a new
 * sign-in link, disable a user, require two-factor sign-in. Every change asks for the recent
 * password: choosing who may route money is as sensitive as routing it.
 */
export const teamPage: DashboardPageModule = (routes, deps) => {
  const options = { nav: 'team', permission: 'users.manage', recentPassword: true } as const;

  routes.get('/team', { nav: 'team', permission: 'users.manage' }, async (ctx, request) => {
    const notice = NOTICES[request.query.done ?? ''];
    return page('Team', await teamBody(ctx, notice ? { notice } : {}));
  });

  routes.post('/team/invite', options, async (ctx, request) => {
    const invite = { email: field(request.body, 'email'), role: field(request.body, 'role') };
    const result = await tryForm(() => inviteDashboardUser(ctx.store, { merchantId: ctx.merchant.id, ...invite, actor: ctx.actor }));
    if (!result.ok) return page('Team', await teamBody(ctx, { error: result.error, invite }), { status: 400 });
    const { user, link } = result.value;
    return page(
      'Team',
      await teamBody(ctx, { link: { url: signInLinkUrl(deps.config.publicUrl, link.token), email: user.email, expiresAt: link.expiresAt } }),
      {
        status: 201,
      },
    );
  });

  routes.post<{ id: string }>('/team/:id/link', options, async (ctx, request) => {
    // Another merchant's or an unknown id is a 404 page, a disabled user a 409 (the router renders refusals).
    const link = await reissueSignInLink(ctx.store, { merchantId: ctx.merchant.id, userId: request.params.id, actor: ctx.actor });
    const users = await listDashboardUsers(ctx.store, ctx.merchant.id);
    const email = users.find((user) => user.id === request.params.id)?.email ?? '';
    return page('Team', await teamBody(ctx, { link: { url: signInLinkUrl(deps.config.publicUrl, link.token), email, expiresAt: link.expiresAt } }));
  });

  routes.post<{ id: string }>('/team/:id/role', options, async (ctx, request) => {
    await setDashboardUserRole(ctx.store, { merchantId: ctx.merchant.id, userId: request.params.id, role: field(request.body, 'role'), actor: ctx.actor });
    return redirect('/dashboard/team?done=role');
  });

  routes.post<{ id: string }>('/team/:id/two-factor/reset', options, async (ctx, request) => {
    await resetTotp(ctx.store, { merchantId: ctx.merchant.id, userId: request.params.id, actor: ctx.actor });
    return redirect('/dashboard/team?done=two-factor-reset');
  });

  routes.post<{ id: string }>('/team/:id/disable', options, async (ctx, request) => {
    await disableDashboardUser(ctx.store, { merchantId: ctx.merchant.id, userId: request.params.id, actor: ctx.actor, keepOwner: true });
    return redirect('/dashboard/team?done=disabled');
  });

  routes.post('/team/two-factor', { ...options, permission: 'settings.manage' }, async (ctx, request) => {
    await setRequireTotp(ctx.store, { merchantId: ctx.merchant.id, required: field(request.body, 'required') === '1', actor: ctx.actor });
    return redirect('/dashboard/team?done=two-factor');
  });
};
