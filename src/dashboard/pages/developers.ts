import { checkKeyRequest, createApiKey, getApiKey, listApiKeys, revokeApiKey, SCOPES, type ApiKey, type Permission } from '../../accounts/index.ts';
import { notFound } from '../../internal/errors.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { modeBadge, timeCell } from '../format.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';

/** Who may manage keys of a mode: sandbox keys owners and developers, live keys owners (src/accounts/permissions.ts). */
const keyPermission = (livemode: boolean): Permission => (livemode ? 'keys.live' : 'keys.test');

function keyRows(ctx: DashboardContext, keys: ApiKey[]): Html {
  if (keys.length === 0) return html`<p class="help">No ${ctx.livemode ? 'live' : 'test'} keys yet.</p>`;
  const canManage = ctx.can(keyPermission(ctx.livemode));
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table>
<caption class="sr-only">${ctx.livemode ? 'Live' : 'Test'} API keys</caption>
<thead><tr><th scope="col">Key</th><th scope="col">Description</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th>${canManage ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}</tr></thead>
<tbody>${keys.map(
    (key) => html`<tr id="${key.id}">
<td><code>${key.hint}</code> ${modeBadge(key.livemode)}</td>
<td>${key.description ?? ''}</td>
<td>${key.scopes.length === 1 && key.scopes[0] === 'read' ? 'read only' : key.scopes.join(', ')}</td>
<td>${timeCell(key.createdAt)}</td>
<td>${timeCell(key.lastUsedAt)}</td>
<td>${key.revokedAt ? html`<span class="badge off">revoked</span> ${timeCell(key.revokedAt)}` : 'active'}</td>
${
  canManage
    ? html`<td>${
        key.revokedAt
          ? ''
          : html`<form method="post" action="/dashboard/developers/keys/${key.id}/revoke" data-confirm="Revoke ${key.hint}? Requests with it fail from now on.">${ctx.csrfField()}<button type="submit" class="danger">Revoke<span class="sr-only"> ${key.hint}</span></button></form>`
      }</td>`
    : ''
}
</tr>`,
  )}</tbody></table></div>`;
}

function createForm(ctx: DashboardContext, params: { error?: string; description?: string }): Html {
  if (!ctx.can(keyPermission(ctx.livemode))) {
    return html`<p class="help">${ctx.livemode ? 'Only owners create and revoke live keys.' : 'Your role cannot create keys.'}</p>`;
  }
  return html`<form method="post" action="/dashboard/developers/keys" class="stack" id="create-key">
${params.error ? errorBox(params.error) : ''}
${ctx.csrfField()}
<label for="key-description">Description</label>
<input id="key-description" name="description" maxlength="200" value="${params.description ?? ''}" aria-describedby="key-description-help">
<p id="key-description-help" class="help">A note to recognise the key by, e.g. "checkout backend".</p>
<fieldset><legend>Scopes</legend>
${SCOPES.map((scope) => html`<label><input type="checkbox" name="scope_${scope}" value="1" checked> ${scope}</label> `)}
<p class="help">"read" alone makes a read-only key (reporting, dashboards).</p>
</fieldset>
<button type="submit">Create ${ctx.livemode ? 'live' : 'test'} key</button>
${ctx.livemode ? html`<p class="help">Live keys move real payments: you will be asked for your password if you have not entered it in the last 10 minutes.</p>` : ''}
</form>`;
}

async function developersPageBody(
  ctx: DashboardContext,
  extra: { created?: { key: ApiKey; secret: string }; notice?: string; error?: string; description?: string } = {},
): Promise<Html> {
  const keys = await listApiKeys(ctx.store, { merchantId: ctx.merchant.id, livemode: ctx.livemode });
  return html`${extra.notice ? noticeBox(extra.notice) : ''}
${
  extra.created
    ? html`<section class="panel" aria-labelledby="new-key-title">
<h2 id="new-key-title">Your new ${extra.created.key.livemode ? 'live' : 'test'} key</h2>
<p>Copy it now: it is shown this once, and only its hash is stored.</p>
<code class="secret" id="new-key-secret">${extra.created.secret}</code>
<button type="button" class="secondary" data-copy="new-key-secret">Copy key</button>
</section>`
    : ''
}
<h2>${ctx.livemode ? 'Live' : 'Test'} API keys</h2>
<p class="help">Keys authenticate your backend to <code>/api/v1</code> as <code>Authorization: Bearer &lt;key&gt;</code>. ${ctx.livemode ? 'Live keys see live data only.' : 'Test keys see sandbox data only.'} Switch the mode at the top to see the other keys.</p>
${keyRows(ctx, keys)}
<h2>Create a key</h2>
${createForm(ctx, extra)}`;
}

/**
 * Developers: the API keys of the current mode, created with scopes (the secret shown once) and
 * revoked, through the same functions as `svc keys` (src/accounts/apiKeys.ts). Sandbox keys:
 * owners and developers; live keys: owners, with the password entered in the last 10 minutes.
 */
export const developersPage: DashboardPageModule = (routes) => {
  routes.get('/developers', { nav: 'developers' }, async (ctx, request) => {
    // After a revocation (post/redirect/get): name the key, looked up in this merchant's keys only.
    const revoked = request.query.revoked ? await getApiKey(ctx.store, { merchantId: ctx.merchant.id, id: request.query.revoked }) : undefined;
    return page('Developers', await developersPageBody(ctx, revoked?.revokedAt ? { notice: `Revoked ${revoked.hint}.` } : {}));
  });

  routes.post('/developers/keys', { nav: 'developers' }, async (ctx, request) => {
    ctx.requirePermission(keyPermission(ctx.livemode));
    if (ctx.livemode) ctx.requireRecentPassword();
    const description = field(request.body, 'description');
    const scopes = SCOPES.filter((scope) => field(request.body, `scope_${scope}`) === '1');
    const result = await tryForm(async () => {
      const checked = checkKeyRequest({ scopes, description });
      return ctx.store.transaction(async (sql) => {
        const created = await createApiKey(sql, { merchantId: ctx.merchant.id, livemode: ctx.livemode, ...checked });
        await ctx.audit('key.created', { sql, target: created.apiKey.id, details: { hint: created.apiKey.hint, scopes: created.apiKey.scopes } });
        return created;
      });
    });
    if (!result.ok) return page('Developers', await developersPageBody(ctx, { error: result.error, description }), { status: 400 });
    return page('Developers', await developersPageBody(ctx, { created: { key: result.value.apiKey, secret: result.value.secret } }), { status: 201 });
  });

  routes.post<{ id: string }>('/developers/keys/:id/revoke', { nav: 'developers' }, async (ctx, request) => {
    const key = await getApiKey(ctx.store, { merchantId: ctx.merchant.id, id: request.params.id });
    if (!key) throw notFound(`no API key ${request.params.id}`);
    ctx.requirePermission(keyPermission(key.livemode));
    if (key.livemode) ctx.requireRecentPassword();
    const revoked = await ctx.store.transaction(async (sql) => {
      const done = await revokeApiKey(sql, key.id, { merchantId: ctx.merchant.id });
      await ctx.audit('key.revoked', { sql, target: key.id, details: { hint: key.hint }, livemode: key.livemode });
      return done!;
    });
    return redirect(`/dashboard/developers?revoked=${encodeURIComponent(revoked.id)}`);
  });
};
