import { Validator } from '@seriousme/openapi-schema-validator';
import type { Router } from 'express';
import { describe, expect } from 'vitest';
import {
  apiDocument,
  createApp as createIngestApp,
  ingestPublicRouters,
  ingestRouter,
} from '@herald/ingest';
import { readRouter } from '@herald/read';
import { createApiApp } from '@herald/runtime';
import {
  assertExchangesMatch,
  createResponseChecker,
  serve,
  takeExchanges,
  testWebhookInput,
} from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from './app.js';

// The OpenAPI document (#32 item 1): valid OpenAPI 3.1, served without a token, covering every
// route, and the response check of the test setup catching an answer that does not match it.
const it = appTest(createApp);

type Paths = Record<string, Record<string, unknown>>;

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const spec = structuredClone(apiDocument()) as unknown as Parameters<Validator['validate']>[0];
    const result = await validator.validate(spec);
    expect(result.errors).toBeUndefined();
    expect({ valid: result.valid, version: validator.version }).toEqual({
      valid: true,
      version: '3.1',
    });
  });

  it('is served at GET /openapi.json without a token', async ({ api }) => {
    const response = await fetch(`${api.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(apiDocument())));
  });

  it("is served the same by the split stack's ingest (the gateway sends it /openapi.json)", async ({
    api,
    deps,
  }) => {
    // ingest alone, as services/ingest/src/main.ts makes it: no read routes, no read import.
    const ingest = await serve(createIngestApp(deps));
    try {
      const split = await fetch(`${ingest.url}/openapi.json`);
      expect(split.status).toBe(200);
      const single = await fetch(`${api.url}/openapi.json`);
      const document = await split.text();
      expect(document).toBe(await single.text());
      expect(Object.keys((JSON.parse(document) as { paths: Paths }).paths)).toContain(
        '/items/{id}',
      );
    } finally {
      await ingest.close();
    }
  });

  it('documents every route ingest and read mount, and nothing else', ({ deps }) => {
    // The single process's app: read's and ingest's routes behind the plumbing.
    const app = createApiApp(
      deps,
      [readRouter(deps), ingestRouter(deps)],
      ingestPublicRouters(deps),
    );
    type Layer = { route?: { path: string | string[]; methods: object }; handle?: Router };
    const walk = (stack: Layer[]): string[] =>
      stack.flatMap((layer) =>
        layer.route
          ? [layer.route.path]
              .flat()
              .flatMap((path) =>
                Object.keys(layer.route!.methods).map(
                  (method) => `${method} ${path.replace(/:(\w+)/g, '{$1}')}`,
                ),
              )
          : (layer.handle as { stack?: Layer[] } | undefined)?.stack
            ? walk((layer.handle as unknown as { stack: Layer[] }).stack)
            : [],
      );
    // The console's files are static, not operations: the document names its page only.
    const mounted = walk((app as unknown as { router: { stack: Layer[] } }).router.stack).filter(
      (route) => !route.includes(' /console'),
    );
    const documented = Object.entries(apiDocument().paths as Paths)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`))
      .filter((route) => !route.includes(' /console'));
    expect(mounted.toSorted()).toEqual(documented.toSorted());
  });

  it('makes a test fail when an answer does not match it (a schema changed on purpose)', async ({
    api,
    db,
  }) => {
    const input = testWebhookInput({ name: 'drift' });
    const created = await api.call('POST', '/webhooks', {
      data: {
        type: 'webhook',
        attributes: {
          name: input.name,
          url: input.url,
          headers: {},
          events: input.events,
          custom_payload: null,
          http_basic_user: null,
          http_basic_password: null,
        },
      },
    });
    expect(created.status).toBe(201);
    expect((await api.call('GET', '/webhooks/999999')).status).toBe(404);
    const exchanges = takeExchanges();
    expect(exchanges.map((exchange) => `${exchange.method} ${exchange.status}`)).toEqual([
      'POST 201',
      'GET 404',
    ]);
    // As they are, the answers match the document.
    expect(() =>
      assertExchangesMatch(createResponseChecker(apiDocument()), exchanges),
    ).not.toThrow();

    // The webhook's name is now documented as an integer, and an attribute the serializer sends
    // is gone from it; a 404 is no longer documented for GET /webhooks/{id}.
    interface ObjectSchema {
      properties: Record<string, ObjectSchema | object>;
    }
    const drifted = structuredClone(apiDocument()) as unknown as {
      components: { schemas: Record<string, ObjectSchema> };
      paths: Paths;
    };
    const webhook = drifted.components.schemas['Webhook']!;
    const attributes = webhook.properties['attributes'] as ObjectSchema;
    attributes.properties['name'] = { type: 'integer' };
    delete attributes.properties['coalesce'];
    const retrieve = drifted.paths['/webhooks/{id}']!['get'] as {
      responses: Record<string, unknown>;
    };
    delete retrieve.responses['404'];
    const check = createResponseChecker(drifted);
    expect(exchanges.flatMap(check)).toEqual([
      expect.stringMatching(
        /^POST \/webhooks → 201: \/data\/attributes must NOT have additional properties \(coalesce\)$/,
      ),
      expect.stringMatching(/^POST \/webhooks → 201: \/data\/attributes\/name must be integer$/),
      expect.stringMatching(
        /^GET \/webhooks\/999999 → 404: status 404 is not documented for GET \/webhooks\/\{id\}/,
      ),
    ]);
    // What the test setup runs after each test: it throws, so the test fails.
    expect(() => assertExchangesMatch(check, exchanges)).toThrow(
      /3 answer\(s\) do not match the OpenAPI document/,
    );
    await db.query('DELETE FROM webhooks WHERE name = $1', [input.name]);
  });
});
