/** The package version, sent in User-Agent. Kept equal to package.json by test/clients/node.test.ts. */
export const VERSION = '0.1.0';
