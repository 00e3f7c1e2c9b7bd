import { createHmac } from 'node:crypto';
import { expect, test } from 'vitest';
import { redactSignatures } from '../../src/api/routes/events.ts';

// A receiver that echoes its request can put the delivery's signature into the response excerpt
// that attempt logs show (to read-only keys too): every encoding of it is redacted.
test('an echoed signature is redacted in every encoding a receiver might use; other text stays', () => {
  const mac = createHmac('sha256', 'whsec_test').update('1700000000.nonce.{}').digest();
  const hex = mac.toString('hex');
  const echoes = [
    `{"x-service-signature":"sha256=${hex}"}`,
    `sig=sha256%3D${hex}`,
    `SHA256=${hex.toUpperCase()}`,
    `bare ${hex} here`,
    `b64 ${mac.toString('base64')} end`,
    `b64url ${mac.toString('base64url')} end`,
  ];
  for (const echo of echoes) {
    const shown = redactSignatures(echo);
    expect(shown).toContain('[redacted]');
    expect(shown.toLowerCase()).not.toContain(hex);
    expect(shown).not.toContain(mac.toString('base64').slice(0, 40));
    expect(shown).not.toContain(mac.toString('base64url').slice(0, 40));
  }
  expect(redactSignatures('{"ok":true,"id":"evt_FyKHtdbmWPh9f2UlAsfq"}')).toBe('{"ok":true,"id":"evt_FyKHtdbmWPh9f2UlAsfq"}');
});
