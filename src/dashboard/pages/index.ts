import type { DashboardPageModule } from '../routes.ts';
import { sessionActions } from './session.ts';
import { placeholderPages } from './placeholders.ts';
import { developersPage } from './developers.ts';
import { accountPage } from './account.ts';
import { teamPage } from './team.ts';
import { auditPage } from './audit.ts';
import { refundPages } from './refunds.ts';
import { settingsPages } from './settings.ts';

/**
 * Every page module of the signed-in dashboard, one a line (see src/dashboard/README.md for the
 * contract). Add yours here and remove its key from placeholders.ts.
 */
// biome-ignore format: one module a line, so pages added in parallel merge without conflicts
export const PAGE_MODULES: DashboardPageModule[] = [
  sessionActions,
  developersPage,
  accountPage,
  teamPage,
  auditPage,
  refundPages,
  settingsPages,
  placeholderPages,
];
