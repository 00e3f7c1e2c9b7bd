import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { countSessions, newMerchant, WALLET, useApi } from '../helpers/api.ts';

/**
 * Creating a session with bad input: a 400 that says what is wrong, and nothing written;
 * unknown and malformed ids are 404s.
 */
const db = useTestDatabase('api_session_validation');
const api = useApi(db);
const { call } = api;

const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...extra });

const sessionsOf = (merchantId: string) => countSessions(db.store, merchantId);

describe('validation: a 400 that says what is wrong, and writes nothing', () => {
  const cases: [string, unknown, string | RegExp][] = [
    ['missing amount', { currency: 'USDC', chain: 'polygon', merchantWallet: WALLET }, 'amount or price is required'],
    ['amount as a JSON number', body({ amount: 25 }), 'amount must be a string'],
    ['negative amount', body({ amount: '-1' }), 'amount must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)'],
    ['zero amount', body({ amount: '0' }), 'amount must be a positive number'],
    ['exponent', body({ amount: '1e3' }), /^amount must be decimal text/],
    ['too many decimals', body({ amount: '1.0000001' }), 'amount 1.0000001 has 7 decimal places; this token has 6'],
    ['below the minimum', body({ amount: '0.001' }), 'amount 0.001 is below the minimum of 0.01'],
    ['above the maximum', body({ amount: '1000000.01' }), 'amount 1000000.01 is above the maximum of 1000000'],
    ['unknown currency', body({ currency: 'DAI' }), 'currency must be one of USDT, USDC'],
    ['unknown chain', body({ chain: 'ethereum' }), 'chain must be one of polygon, solana, base, bsc, arbitrum, optimism'],
    [
      'bad EIP-55 checksum',
      body({ merchantWallet: '0x70997970c51812DC3A010C7d01b50e0d17dc79C8' }),
      /^merchantWallet "0x70997970c51812DC3A010C7d01b50e0d17dc79C8" is not a valid polygon address/,
    ],
    ['EVM wallet on solana', body({ chain: 'solana', merchantWallet: WALLET }), /is not a valid solana address \(base58 of a 32-byte key\)$/],
    ['relative webhookUrl', body({ webhookUrl: '/hook' }), 'webhookUrl must be an absolute http or https URL'],
    ['ftp successUrl', body({ successUrl: 'ftp://shop.example/ok' }), 'successUrl must be an absolute http or https URL'],
    ['metadata value not a string', body({ metadata: { n: 1 } }), 'metadata.n must be a string'],
    [
      'metadata with 51 keys',
      body({ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }),
      'metadata must have at most 50 keys',
    ],
    ['metadata key too long', body({ metadata: { ['k'.repeat(41)]: 'v' } }), `metadata key "${'k'.repeat(41)}" must be at most 40 characters`],
    ['metadata value too long', body({ metadata: { k: 'v'.repeat(501) } }), 'metadata.k must be at most 500 characters'],
    ['expiresIn too short', body({ expiresIn: 59 }), 'expiresIn must be at least 60'],
    ['expiresIn too long', body({ expiresIn: 604801 }), 'expiresIn must be at most 604800'],
    ['expiresIn not an integer', body({ expiresIn: 60.5 }), 'expiresIn must be an integer'],
    ['unknown field', body({ colour: 'red' }), 'unknown field "colour"'],
    ['body is an array', [body()], 'the request body must be a JSON object'],
    ['NUL in metadata', body({ metadata: { note: 'a\u0000b' } }), 'body.metadata.note contains a NUL character (U+0000), which is not accepted'],
  ];
  test.each(cases)('%s', async (_name, payload, message) => {
    const m = await newMerchant(db.store);
    for (const url of ['/api/v1/sessions', '/v1/payments']) {
      const answer = await call('POST', url, { key: m.test, body: payload });
      expect(answer.status).toBe(400);
      if (typeof message === 'string') expect(answer.body).toEqual({ error: message });
      else expect(answer.body.error).toMatch(message);
    }
    expect(await sessionsOf(m.id)).toBe(0);
  });

  test('malformed JSON, a wrong content type, an empty body and an oversized body are 400s', async () => {
    const m = await newMerchant(db.store);
    const send = (payload: string, contentType: string) =>
      api.app.inject({ method: 'POST', url: '/api/v1/sessions', headers: { authorization: `Bearer ${m.test}`, 'content-type': contentType }, payload });
    const malformed = await send('{"amount": "1",', 'application/json');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatch(/JSON/);
    const form = await send('amount=1', 'application/x-www-form-urlencoded');
    expect(form.statusCode).toBe(400);
    expect(form.json()).toEqual({
      error: 'Content-Type "application/x-www-form-urlencoded" is not accepted: send a JSON body with Content-Type: application/json',
    });
    expect((await send('hello', 'text/plain')).statusCode).toBe(400);
    expect((await send('', 'application/json')).statusCode).toBe(400);
    const huge = await send(JSON.stringify(body({ metadata: { k: 'x'.repeat(70_000) } })), 'application/json');
    expect(huge.statusCode).toBe(400);
    expect(huge.json()).toEqual({ error: 'request body is larger than 65536 bytes' });
    const proto = await send('{"__proto__": {"x": 1}, "amount": "1", "currency": "USDC", "chain": "polygon"}', 'application/json');
    expect(proto.statusCode).toBe(400);
    expect(await sessionsOf(m.id)).toBe(0);
  });

  test('unknown session ids and malformed ids are both 404 (they name no session; every route in unknownIds.test.ts)', async () => {
    const m = await newMerchant(db.store);
    expect((await call('GET', '/api/v1/sessions/ses_doesnotexist000000', { key: m.test })).status).toBe(404);
    expect((await call('GET', `/api/v1/payments/${'x'.repeat(65)}`, { key: m.test })).status).toBe(404);
  });
});
