import type { DashboardPageModule } from '../routes.ts';
import { sessionActions } from './session.ts';
import { placeholderPages } from './placeholders.ts';
import { homePage } from './home.ts';
import { paymentsPages } from './payments.ts';
import { unmatchedPage } from './unmatched.ts';
import { linksPage } from './links.ts';

/**
 * Every page module of the signed-in dashboard, one a line (see src/dashboard/README.md for the
 * contract). Add yours here and remove its key from placeholders.ts.
 */
export const PAGE_MODULES: DashboardPageModule[] = [sessionActions, homePage, paymentsPages, unmatchedPage, linksPage, placeholderPages];
