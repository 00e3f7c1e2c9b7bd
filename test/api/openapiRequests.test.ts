import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';

/**
 * The OpenAPI document and the server agree on requests too, as a validating proxy (Stoplight
 * Prism) checks them: the actions that take no body say their body is optional. The checker of
 * test/helpers/openapiCheck.ts holds every request of the API tests to the document this way.
 */
const db = useTestDatabase('openapi_requests');
const api = useApi(db);

type Document = { paths: Record<string, Record<string, { requestBody?: { required?: boolean } }>> };

const OPTIONAL = [
  ['/api/v1/webhooks/{id}/rotate-secret', 'post'],
  ['/api/v1/refunds/{id}/reject', 'post'],
  ['/api/v1/events/{id}/redeliver', 'post'],
  ['/api/v1/webhook-secret/rotate', 'post'],
] as const;

describe('request bodies in the OpenAPI document', () => {
  test('the actions that take no body mark it optional; bodies the server needs stay required', async () => {
    const document = (await api.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Document;
    for (const [path, method] of OPTIONAL) expect(document.paths[path]?.[method]?.requestBody?.required, `${method} ${path}`).toBe(false);
    expect(document.paths['/api/v1/payments']!.post!.requestBody!.required).toBe(true);
    expect(document.paths['/api/v1/sessions']!.post!.requestBody!.required).toBe(true);
    expect(document.paths['/api/v1/webhooks']!.post!.requestBody!.required).toBe(true);
  });

  test('rotating without a body is accepted on both interfaces and both prefixes, and checked against the document', async () => {
    const m = await newMerchant(db.store);
    const created = await api.call('POST', '/api/v1/webhooks', { key: m.test, body: { url: 'http://127.0.0.1:9/hooks' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // Interface A's bearer key on /api/v1, Interface B's X-API-Key on /v1: the checker validates each request.
    expect((await api.call('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key: m.test })).status).toBe(200);
    expect((await api.call('POST', `/v1/webhooks/${id}/rotate-secret`, { key: m.test, as: 'x-api-key' })).status).toBe(200);
    expect((await api.call('POST', '/api/v1/webhook-secret/rotate', { key: m.test, as: 'x-api-key' })).status).toBe(200);
    // A body the document allows is checked too.
    expect((await api.call('POST', `/api/v1/webhooks/${id}/rotate-secret`, { key: m.test, body: { expiresIn: 0 } })).status).toBe(200);
  });

  test('the checker fails an accepted body-less request where the document requires a body (as Prism did)', async () => {
    const checker = await createOpenApiChecker(api.app);
    const operation = (checker.document as Document).paths['/api/v1/webhooks/{id}/rotate-secret']!.post!;
    const answer = { id: 'we_x', object: 'webhook_endpoint' };
    operation.requestBody!.required = true;
    expect(() => checker.check('POST', '/api/v1/webhooks/we_x/rotate-secret', 200, answer, {})).toThrow(/marks its body required/);
    // A refused request (4xx) is not held to the document: tests send bad requests on purpose.
    expect(() => checker.check('POST', '/api/v1/webhooks/we_x/rotate-secret', 404, { error: 'no such endpoint' }, {})).not.toThrow();
  });

  test('the checker fails an accepted body that the document refuses', async () => {
    const checker = await createOpenApiChecker(api.app);
    expect(() => checker.check('POST', '/api/v1/webhooks/we_x/rotate-secret', 200, {}, { body: { expiresIn: 'soon' } })).toThrow(
      /accepted a body the OpenAPI document refuses/,
    );
  });
});
