import { describe, expect, test } from 'vitest';
import { safeHref } from '../../src/dashboard/html.ts';
import { safeNext } from '../../src/dashboard/signIn.ts';

/**
 * Where the dashboard sends a browser: after sign-in and re-authentication (`next`), and the
 * links it renders from stored URLs. Each hostile form resolves, in a browser's URL parser, to
 * another site or a script; each must fall back to the dashboard or `#`.
 */
const HOSTILE = ['//evil.example/x', '/\\evil.example/x', '/\t/evil.example', '/\n/evil.example', 'https://evil.example/dashboard', 'javascript:alert(1)'];

describe('no open redirect, no off-site link from a relative path', () => {
  test('next after sign-in or re-auth: only a dashboard path', () => {
    for (const next of [...HOSTILE, '/dashboard//evil.example', '/dashboard/\\evil.example', '/dashboardevil', '/api/v1/keys'])
      expect(safeNext(next), next).toBe('/dashboard');
    expect(safeNext('/dashboard/payments?status=confirmed&q=a%20b')).toBe('/dashboard/payments?status=confirmed&q=a%20b');
  });

  test('hrefs from stored URLs: http(s) or a path on this site, never one a browser reads as another host', () => {
    for (const url of HOSTILE.filter((url) => !url.startsWith('https:'))) {
      const href = safeHref(url);
      expect(href === '#' || new URL(href, 'https://pay.example.test/dashboard/').host === 'pay.example.test', `${JSON.stringify(url)} -> ${href}`).toBe(true);
    }
    expect(safeHref('/checkout/ses_1')).toBe('/checkout/ses_1');
    expect(safeHref('https://polygonscan.com/tx/0xab')).toBe('https://polygonscan.com/tx/0xab');
  });
});
