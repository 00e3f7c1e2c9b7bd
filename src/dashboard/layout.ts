import type { DashboardSession } from '../accounts/index.ts';
import { roleCan, type Permission } from '../accounts/index.ts';
import { assetUrl, type AssetName } from './assets.ts';
import { html, type Html } from './html.ts';

/** The sections of the dashboard, in nav order. `path` is under /dashboard. */
export const NAV = [
  { key: 'home', label: 'Home', path: '' },
  { key: 'payments', label: 'Payments', path: '/payments' },
  { key: 'unmatched', label: 'Unmatched', path: '/unmatched' },
  { key: 'links', label: 'Links', path: '/links' },
  { key: 'refunds', label: 'Refunds', path: '/refunds' },
  { key: 'webhooks', label: 'Webhooks', path: '/webhooks' },
  { key: 'developers', label: 'Developers', path: '/developers' },
  { key: 'settings', label: 'Settings', path: '/settings' },
  { key: 'team', label: 'Team', path: '/team', permission: 'users.manage' },
  { key: 'audit', label: 'Audit log', path: '/audit', permission: 'audit.read' },
] as const satisfies readonly { key: string; label: string; path: string; permission?: Permission }[];
export type NavKey = (typeof NAV)[number]['key'] | 'account';

/** The page of a section: where the mode toggle returns to after a POST (whose URL answers no GET). */
export function sectionPath(nav: NavKey): string {
  return `/dashboard${NAV.find((item) => item.key === nav)?.path ?? `/${nav}`}`;
}

const HTMX_CONFIG = JSON.stringify({
  // htmx 2 would otherwise add an inline <style>, which the CSP refuses, and may eval attributes.
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  selfRequestsOnly: true,
  // Swap 4xx answers too: a refusal's inline error box (and the password prompt) lands where the
  // request's result would have; 5xx and network errors swap nothing.
  responseHandling: [
    { code: '204', swap: false },
    { code: '[23]..', swap: true },
    { code: '[4]..', swap: true, error: false },
    { code: '...', swap: false, error: true },
  ],
});

/** `<head>` of every dashboard document. */
function head(title: string, assets: readonly AssetName[] = []): Html {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="data:,">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · svc dashboard</title>
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
<script src="${assetUrl('htmx.min.js')}" defer></script>
<script src="${assetUrl('dashboard.js')}" defer></script>
${assets.map((name) =>
  name.endsWith('.css')
    ? html`<link rel="stylesheet" href="${assetUrl(name)}">
`
    : html`<script src="${assetUrl(name)}" defer></script>
`,
)}
</head>`;
}

/** The hidden CSRF field every dashboard form carries. */
export function csrfField(csrfToken: string): Html {
  return html`<input type="hidden" name="_csrf" value="${csrfToken}">`;
}

/** The page shell for a signed-in user: header (merchant, mode toggle, user menu), nav, main. */
export function renderLayout(
  session: DashboardSession,
  params: { title: string; nav: NavKey; body: Html; path: string; assets?: readonly AssetName[] },
): string {
  const { user, merchant, livemode, csrfToken } = session;
  const links = NAV.filter((item) => !('permission' in item) || roleCan(user.role, item.permission)).map(
    (item) => html`<li><a href="/dashboard${item.path}"${item.key === params.nav ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
  );
  const modeLabel = livemode ? 'Live data' : 'Test data';
  const document = html`<!doctype html>
<html lang="en">
${head(params.title, params.assets)}
<body class="${livemode ? 'mode-live' : 'mode-test'}" hx-headers="${JSON.stringify({ 'X-CSRF-Token': csrfToken })}">
<a class="skip" href="#main">Skip to content</a>
${livemode ? '' : html`<div class="test-banner" role="status">Test mode: you are viewing sandbox data. No real funds move.</div>`}
<header class="top">
  <a class="brand" href="/dashboard">svc <span class="merchant">${merchant.name}</span></a>
  <form class="mode" method="post" action="/dashboard/mode">
    ${csrfField(csrfToken)}
    <input type="hidden" name="livemode" value="${livemode ? 'false' : 'true'}">
    <input type="hidden" name="next" value="${params.path}">
    <span class="mode-now" id="mode-now">${modeLabel}</span>
    <button type="submit" class="secondary" aria-describedby="mode-now">${livemode ? 'Switch to test data' : 'Switch to live data'}</button>
  </form>
  <details class="user-menu">
    <summary><span class="sr-only">Account menu for </span>${user.email} <span class="role">${user.role}</span></summary>
    <div class="menu">
      <a href="/dashboard/account">Your account</a>
      <form method="post" action="/dashboard/sign-out">${csrfField(csrfToken)}<button type="submit" class="secondary">Sign out</button></form>
      <form method="post" action="/dashboard/sign-out-everywhere">${csrfField(csrfToken)}<button type="submit" class="secondary">Sign out everywhere</button></form>
    </div>
  </details>
</header>
<div class="frame">
<nav class="side" aria-label="Dashboard"><ul>${links}</ul></nav>
<main id="main" tabindex="-1">
<h1>${params.title}</h1>
${params.body}
</main>
</div>
</body>
</html>`;
  return document.text;
}

/** A page for someone not signed in (sign-in, set password, messages): no nav, same head and CSP. */
export function renderBarePage(params: { title: string; body: Html }): string {
  return html`<!doctype html>
<html lang="en">
${head(params.title)}
<body class="bare">
<main id="main" class="card">
<p class="brand">svc dashboard</p>
<h1>${params.title}</h1>
${params.body}
</main>
</body>
</html>`.text;
}
