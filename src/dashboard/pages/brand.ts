import {
  getMerchantBrand,
  getMerchantLogo,
  MAX_LOGO_BYTES,
  removeMerchantLogo,
  setMerchantLogo,
  LOGO_TYPES,
  setMerchantBrand,
  textColorOn,
  type MerchantBrand,
} from '../../accounts/index.ts';
import { badRequest, notFound } from '../../internal/errors.ts';
import type { UploadedFile } from '../multipart.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { file, page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';

/**
 * Settings › Brand: what customers see of the merchant on checkout pages and receipts (issue 26):
 * the display name, accent colour, support email and URL, and the logo (uploaded here with a
 * multipart form, or the API's `POST /brand/logo`, or `svc merchants update --logo`; checked by
 * accounts/logo.ts's checkLogo either way: PNG, JPEG or WebP by their bytes, never SVG,
 * size-limited). Owners change it (`settings.manage`); every change is audited
 * (`merchant.brand_changed`, `merchant.logo_set`, `merchant.logo_removed`).
 * A support URL set while viewing test data may be http (shown on sandbox checkouts only).
 */

const NOTICES: Record<string, string> = { saved: 'Brand saved.', 'logo-removed': 'Logo removed.', 'logo-set': 'Logo uploaded.' };

function preview(brand: MerchantBrand): Html {
  const accent = brand.accentColor;
  return html`<div class="brand-preview">
  ${brand.logoSha256 ? html`<img id="brand-logo" src="/dashboard/settings/brand/logo?v=${brand.logoSha256.slice(0, 16)}" alt="${brand.name} logo" class="brand-logo">` : html`<p class="help">No logo yet.</p>`}
  <p>Customers see: <strong id="brand-name">${brand.name}</strong>${accent ? html`, accent <code id="brand-accent">${accent}</code> (text on it: ${textColorOn(accent) === '#000000' ? 'black' : 'white'})` : ''}${brand.supportEmail ? html`, support <span id="brand-support-email">${brand.supportEmail}</span>` : ''}${brand.supportUrl ? html`, <span id="brand-support-url">${brand.supportUrl}</span>` : ''}.</p>
</div>`;
}

async function brandPage(
  ctx: DashboardContext,
  parts: { notice?: string; error?: string; logoError?: string; input?: Record<string, string> } = {},
): Promise<Html> {
  const brand = (await getMerchantBrand(ctx.store, ctx.merchant.id))!;
  const editable = ctx.can('settings.manage');
  const value = (name: string, stored: string | null) => parts.input?.[name] ?? stored ?? '';
  const disabled = editable ? '' : html` disabled`;
  return html`${parts.notice ? noticeBox(parts.notice) : ''}
<section aria-labelledby="brand-heading">
<h2 id="brand-heading">Brand</h2>
<p class="help">Shown on your checkout pages, payment links and receipts.</p>
${preview(brand)}
${parts.error ? errorBox(parts.error) : ''}
<form method="post" action="/dashboard/settings/brand" class="stack" id="brand-form">
  ${ctx.csrfField()}
  <label for="brand-name-input">Display name</label>
  <input id="brand-name-input" name="name" required maxlength="200" value="${value('name', brand.name)}"${disabled}>
  <label for="brand-accent-input">Accent colour (#rrggbb, empty for none)</label>
  <input id="brand-accent-input" name="accentColor" maxlength="7" pattern="#[0-9a-fA-F]{6}" placeholder="#1f5fd6" value="${value('accentColor', brand.accentColor)}"${disabled}>
  <label for="brand-email-input">Support email (optional)</label>
  <input id="brand-email-input" name="supportEmail" type="email" maxlength="254" value="${value('supportEmail', brand.supportEmail)}"${disabled}>
  <label for="brand-url-input">Support page URL, https (optional)</label>
  <input id="brand-url-input" name="supportUrl" type="url" maxlength="2048" value="${value('supportUrl', brand.supportUrl)}"${disabled}>
  ${editable ? html`<button type="submit">Save brand</button>` : html`<p class="help">Only owners change the brand.</p>`}
</form>
<h3>Logo</h3>
<p class="help" id="logo-help">PNG, JPEG or WebP, at most ${String(MAX_LOGO_BYTES / 1024)} KiB (never SVG). Also with the API (<code>POST /api/v1/brand/logo</code>, a live key) or the operator's <code>svc merchants update --logo FILE</code>.</p>
${parts.logoError ? errorBox(parts.logoError) : ''}
${
  editable
    ? html`<form method="post" action="/dashboard/settings/brand/logo" enctype="multipart/form-data" class="stack" id="logo-form">
  ${ctx.csrfField()}
  <label for="logo-file">Logo file</label>
  <input id="logo-file" name="logo" type="file" accept="${LOGO_TYPES.join(',')}" required aria-describedby="logo-help">
  <button type="submit">Upload logo</button>
</form>`
    : ''
}
${
  brand.logoSha256 && editable
    ? html`<form method="post" action="/dashboard/settings/brand/logo/remove" class="inline" data-confirm="Remove the logo from your checkout pages?">${ctx.csrfField()}<button type="submit" class="danger">Remove logo</button></form>`
    : ''
}
</section>`;
}

export const brandPages: DashboardPageModule = (routes) => {
  routes.get('/settings/brand', { nav: 'settings' }, async (ctx, request) =>
    page('Brand', await brandPage(ctx, { notice: NOTICES[request.query.done ?? ''] })),
  );

  // The logo as the dashboard shows it (its CSP allows images from itself only).
  routes.get('/settings/brand/logo', { nav: 'settings' }, async (ctx) => {
    const logo = await getMerchantLogo(ctx.store, ctx.merchant.id);
    if (!logo) throw notFound('no logo');
    return file(`logo.${logo.contentType.split('/')[1]}`, logo.contentType, logo.bytes);
  });

  routes.post('/settings/brand', { nav: 'settings', permission: 'settings.manage' }, async (ctx, request) => {
    const input = {
      name: field(request.body, 'name'),
      accentColor: field(request.body, 'accentColor'),
      supportEmail: field(request.body, 'supportEmail'),
      supportUrl: field(request.body, 'supportUrl'),
    };
    const result = await tryForm(() =>
      ctx.store.transaction(async (sql) => {
        const { changed } = await setMerchantBrand(
          sql,
          ctx.merchant.id,
          { name: input.name, accentColor: input.accentColor || null, supportEmail: input.supportEmail || null, supportUrl: input.supportUrl || null },
          { livemode: ctx.livemode },
        );
        if (Object.keys(changed).length > 0) await ctx.audit('merchant.brand_changed', { target: ctx.merchant.id, sql, details: changed, livemode: null });
      }),
    );
    if (result.ok) return redirect('/dashboard/settings/brand?done=saved');
    return page('Brand', await brandPage(ctx, { error: result.error, input }), { status: result.status });
  });

  routes.post('/settings/brand/logo', { nav: 'settings', permission: 'settings.manage' }, async (ctx, request) => {
    const upload = (request.body as Record<string, unknown> | undefined)?.logo as UploadedFile | string | undefined;
    const result = await tryForm(async () => {
      if (!upload || typeof upload === 'string' || upload.bytes.length === 0) throw badRequest('choose a logo file (PNG, JPEG or WebP) to upload');
      // The browser's declared type comes from the file name; only an image type is passed on for
      // checkLogo to compare with the bytes (an SVG declared as such is refused by it too).
      const declared = upload.contentType.startsWith('image/') ? upload.contentType : undefined;
      await ctx.store.transaction(async (sql) => {
        const stored = await setMerchantLogo(sql, ctx.merchant.id, upload.bytes, declared);
        await ctx.audit('merchant.logo_set', {
          target: ctx.merchant.id,
          sql,
          livemode: null,
          details: { contentType: stored.contentType, width: stored.width, height: stored.height, bytes: stored.size, sha256: stored.sha256 },
        });
      });
    });
    if (result.ok) return redirect('/dashboard/settings/brand?done=logo-set');
    return page('Brand', await brandPage(ctx, { logoError: result.error }), { status: result.status });
  });

  routes.post('/settings/brand/logo/remove', { nav: 'settings', permission: 'settings.manage' }, async (ctx) => {
    await ctx.store.transaction(async (sql) => {
      if (await removeMerchantLogo(sql, ctx.merchant.id)) await ctx.audit('merchant.logo_removed', { target: ctx.merchant.id, sql, livemode: null });
    });
    return redirect('/dashboard/settings/brand?done=logo-removed');
  });
};
