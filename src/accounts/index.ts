/**
 * Merchants, their API keys and their receiving wallets. Every function takes the `Sql` to run
 * on as its first argument, so callers compose them inside their own transactions.
 */
export * from './merchants.ts';
export * from './apiKeys.ts';
export * from './wallets.ts';
export * from './walletRules.ts';
export * from './passwords.ts';
export * from './dashboardUsers.ts';
export * from './dashboardSessions.ts';
export * from './signInThrottle.ts';
export * from './permissions.ts';
export * from './totp.ts';
export * from './audit.ts';
export * from './brand.ts';
export * from './logo.ts';
