import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { buildLazySerializer } from '../../src/api/lazySerializers.ts';
import { registerValidation } from '../../src/api/validation.ts';

// Issue 28: the API's validators and response serializers are built on a route's first request,
// not when the server starts. A schema that cannot compile shows it: an eager build fails the
// start, a lazy one fails only the request that needs it.
function app() {
  const server = Fastify({ schemaController: { compilersFactory: { buildSerializer: buildLazySerializer } } });
  registerValidation(server);
  server.post(
    '/ok',
    { schema: { body: { type: 'object', properties: { n: { type: 'string' } }, required: ['n'], additionalProperties: false } } },
    async (request) => ({
      echoed: (request.body as { n: string }).n,
    }),
  );
  server.get('/shaped', { schema: { response: { 200: { type: 'object', properties: { kept: { type: 'string' }, big: { type: 'string' } } } } } }, async () => ({
    kept: 'yes',
    dropped: 'no',
    big: 10n.toString(),
  }));
  server.post('/broken-body', { schema: { body: { $ref: 'missing#/nothing' } } }, async () => ({}));
  server.get('/broken-response', { schema: { response: { 200: { $ref: 'missing#/nothing' } } } }, async () => ({}));
  return server;
}

describe('lazily built validators and serializers', () => {
  test('the server starts though two routes have schemas that cannot compile; those routes fail alone', async () => {
    const server = app();
    await server.ready();
    expect((await server.inject({ method: 'POST', url: '/broken-body', payload: {} })).statusCode).toBe(500);
    expect((await server.inject({ method: 'GET', url: '/broken-response' })).statusCode).toBe(500);
    await server.close();
  });

  test('a validator built on first use refuses and accepts as before, every time', async () => {
    const server = app();
    for (let i = 0; i < 2; i++) {
      const refused = await server.inject({ method: 'POST', url: '/ok', payload: { n: 1 } });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ message: 'n must be a string' });
      const unknown = await server.inject({ method: 'POST', url: '/ok', payload: { n: 'a', m: 'b' } });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json()).toMatchObject({ message: 'unknown field "m"' });
      const accepted = await server.inject({ method: 'POST', url: '/ok', payload: { n: 'a' } });
      expect(accepted.json()).toEqual({ echoed: 'a' });
    }
    await server.close();
  });

  test('a serializer built on first use writes only the schema’s fields, every time', async () => {
    const server = app();
    for (let i = 0; i < 2; i++) expect((await server.inject({ method: 'GET', url: '/shaped' })).body).toBe('{"kept":"yes","big":"10"}');
    await server.close();
  });
});
