import type { DashboardPageModule } from '../routes.ts';
import { sessionActions } from './session.ts';
import { placeholderPages } from './placeholders.ts';
import { refundPages } from './refunds.ts';
import { settingsPages } from './settings.ts';

/**
 * Every page module of the signed-in dashboard, one a line (see src/dashboard/README.md for the
 * contract). Add yours here and remove its key from placeholders.ts.
 */
export const PAGE_MODULES: DashboardPageModule[] = [sessionActions, placeholderPages, refundPages, settingsPages];
