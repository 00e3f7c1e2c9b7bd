import { html } from '../html.ts';
import { NAV, type NavKey } from '../layout.ts';
import { page, type DashboardPageModule } from '../routes.ts';

/**
 * Sections whose page is not built yet: each answers a page that says so. Whoever builds one
 * removes its key here and adds its module to pages/index.ts.
 */
const NOT_BUILT_YET: NavKey[] = ['home', 'payments', 'unmatched', 'links', 'webhooks'];

export const placeholderPages: DashboardPageModule = (routes) => {
  for (const item of NAV.filter((entry) => NOT_BUILT_YET.includes(entry.key))) {
    routes.get(item.path || '/', { nav: item.key, ...('permission' in item ? { permission: item.permission } : {}) }, async (ctx) =>
      page(
        item.label,
        html`<p class="placeholder">This page is not built yet. Until it is, the API (<code>/api/v1</code>) and the <code>svc</code> CLI do what it will do.</p>
<p>You are signed in to <strong>${ctx.merchant.name}</strong> as ${ctx.user.role}, viewing ${ctx.livemode ? 'live' : 'test'} data.</p>`,
      ),
    );
  }
};
