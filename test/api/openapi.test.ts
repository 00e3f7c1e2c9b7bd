import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';

const db = useTestDatabase('api_openapi');
let app: ReturnType<typeof buildApi>;
let url: string;

beforeAll(async () => {
  app = buildApi(db.store);
  url = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => app.close());

type Document = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[]; requestBody?: unknown }>> };

describe('OpenAPI document', () => {
  test('served at /api/v1/openapi.json (and /v1) without a key; a third-party parser accepts it as OpenAPI 3.1', async () => {
    const response = await fetch(`${url}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as Document;
    expect(document.openapi).toBe('3.1.0');
    // Generated clients learn the base URL from `servers`.
    expect((document as unknown as { servers: { url: string }[] }).servers).toEqual([
      { url: expect.stringMatching(/^https?:\/\//), description: expect.stringContaining('/v1') },
    ]);
    expect(await (await fetch(`${url}/v1/openapi.json`)).json()).toEqual(document);
    const validated = (await SwaggerParser.validate(structuredClone(document) as never)) as unknown as Document;
    expect(Object.keys(validated.paths).length).toBeGreaterThan(10);
  });

  test('documents every endpoint of both interfaces once (under /api/v1), each with its success and error responses', async () => {
    const document = (await (await fetch(`${url}/api/v1/openapi.json`)).json()) as Document;
    const operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    for (const expected of [
      'POST /api/v1/sessions',
      'GET /api/v1/sessions/{sessionId}',
      'GET /api/v1/health',
      'POST /api/v1/payments',
      'GET /api/v1/payments/{id}',
      'GET /api/v1/payments',
      'POST /api/v1/payment-links',
      'GET /api/v1/payment-links',
      'PATCH /api/v1/payment-links/{id}',
      'GET /pay/{linkId}',
      'GET /api/v1/currencies',
      'POST /api/v1/refunds',
      'GET /api/v1/refunds/{id}',
      'POST /api/v1/refunds/{id}/complete',
      'POST /api/v1/refunds/{id}/reject',
      'GET /api/v1/status',
      'POST /api/v1/checkout/sessions',
      'GET /api/v1/checkout/sessions/{id}',
      'GET /api/v1/wallets',
      'POST /api/v1/wallets',
      'POST /api/v1/wallets/challenges',
      'POST /api/v1/wallets/{id}/default',
      'DELETE /api/v1/wallets/{id}',
    ]) {
      expect(operations).toContain(expected);
    }
    expect(operations.some((operation) => operation.includes(' /v1/'))).toBe(false);
    expect(document.paths['/api/v1/sessions']!.post!.responses).toHaveProperty('201');
    expect(Object.keys(document.paths['/api/v1/payments']!.post!.responses).sort()).toEqual(['201', '400', '401', '403', '409', '422', '429', '503']);
    expect(document.paths['/api/v1/health']!.get!.security).toEqual([]);
    const ids = Object.values(document.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => (operation as { operationId?: string }).operationId),
    );
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect((document.paths['/api/v1/payments/{id}']!.get as { operationId?: string }).operationId).toBe('getPaymentsById');
  });

  test('/docs is an interactive reference served by the daemon itself (no CDN)', async () => {
    const page = await fetch(`${url}/docs`, { redirect: 'follow' });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('swagger-ui');
    expect(html).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs|jsdelivr)/);
    const scripts = [...html.matchAll(/src="([^"]+\.js)"/g)].map((match) => match[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) {
      const asset = await fetch(new URL(script, page.url));
      expect(asset.status, script).toBe(200);
      await asset.arrayBuffer();
    }
    const initializer = await (await fetch(new URL('./static/swagger-initializer.js', page.url.endsWith('/') ? page.url : `${page.url}/`))).text();
    expect(initializer).toContain('/api/v1/openapi.json');
  });

  test('passes `redocly lint` with its recommended rules (redocly.yaml): no errors', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-'));
    try {
      const file = path.join(dir, 'openapi.json');
      fs.writeFileSync(file, await (await fetch(`${url}/api/v1/openapi.json`)).text());
      const root = path.resolve(import.meta.dirname, '../..');
      const cli = path.join(root, 'node_modules/@redocly/cli/bin/cli.js');
      // No telemetry, update check or banner: the lint runs offline. Exit code 1 means errors; the JSON says which.
      const env = {
        ...process.env,
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_NOTIFICATIONS: 'true',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        DO_NOT_TRACK: '1',
        CI: 'true',
      };
      const { stdout } = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--config', path.join(root, 'redocly.yaml'), '--format=json'], {
        env,
        cwd: dir,
      }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
        totals: { errors: number };
        problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[];
      };
      const errors = report.problems
        .filter((problem) => problem.severity === 'error')
        .map((problem) => `${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`);
      expect(errors).toEqual([]);
      expect(report.totals.errors).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
