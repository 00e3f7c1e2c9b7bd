import type { DashboardPageModule } from '../routes.ts';
import { sessionActions } from './session.ts';
import { developersPage } from './developers.ts';
import { accountPage } from './account.ts';
import { teamPage } from './team.ts';
import { auditPage } from './audit.ts';
import { webhookDeliveryPages } from './webhookDeliveries.ts';
import { webhookPages } from './webhooks.ts';
import { homePage } from './home.ts';
import { paymentsPages } from './payments.ts';
import { unmatchedPage } from './unmatched.ts';
import { linksPage } from './links.ts';
import { refundPages } from './refunds.ts';
import { settingsPages } from './settings.ts';
import { brandPages } from './brand.ts';
import { testPaymentPage } from './testPayment.ts';

/**
 * Every page module of the signed-in dashboard, one a line (see src/dashboard/README.md for the
 * contract). Add yours here.
 */
// biome-ignore format: one module a line, so pages added in parallel merge without conflicts
export const PAGE_MODULES: DashboardPageModule[] = [
  sessionActions,
  homePage,
  paymentsPages,
  unmatchedPage,
  linksPage,
  developersPage,
  accountPage,
  teamPage,
  auditPage,
  webhookPages,
  webhookDeliveryPages,
  refundPages,
  settingsPages,
  brandPages,
  testPaymentPage,
];
