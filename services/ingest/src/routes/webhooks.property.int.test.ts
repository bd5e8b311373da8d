import { describe, expect } from 'vitest';
import fc from 'fast-check';
import type { TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';
import { REQUIRED_ATTRIBUTES } from '../../test/webhook-attributes.js';

/** Any body sent to the webhook endpoints gets a 2xx or a documented 4xx, never a 500. */
const it = appTest(createApp);

let existingId: string;

it.beforeAll(async ({ api }) => {
  const response = await post(api, '/webhooks', {
    data: {
      type: 'webhook',
      attributes: {
        name: 'existing',
        url: 'https://example.com/',
        headers: {},
        events: [],
        custom_payload: null,
        http_basic_user: null,
        http_basic_password: null,
      },
    },
  });
  existingId = ((await response.json()) as { data: { id: string } }).data.id;
});

function post(api: TestApi, path: string, body: unknown, method = 'POST') {
  return api.fetch(path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const pick = <T>(...values: T[]) => fc.constantFrom(...values);
/** Values that are sometimes right and often subtly wrong, to reach deep into the validator. */
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  pick('item', 'item_type', 'cda_cache_tags', 'environment_type', 'publish', 'create', '', ' '),
  pick('https://example.com/{{x}}', 'http://[::1]/', 'http://{{a}}/', 'https://a.test/{{#a}}'),
  pick('{{#entity}}{{id}}{{/entity}}', '{{', '{{/x}}', '{{=<% %>=}}', '{{{a}}'),
);
const leaf = fc.oneof(text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(text, tie('v'), { maxKeys: 4 }),
  ),
})).v;
const filter = fc.record(
  {
    entity_type: fc.oneof(
      pick('item_type', 'item', 'build_trigger', 'environment', 'environment_type'),
      value,
    ),
    entity_ids: fc.oneof(
      fc.array(fc.oneof(text, pick('primary', 'sandbox')), { maxLength: 3 }),
      value,
    ),
  },
  { requiredKeys: [] },
);
/** Field conditions (extension): GET /items operators, operands right, wrong or hostile. */
const operand = fc.oneof(
  value,
  pick('5', 'true', 'a,b', '2026-01-01', '(a+)+$', '\\1', '[[:alpha:]]', '\\m', '('),
  fc.record(
    { pattern: fc.oneof(text, pick('^a', '(a|b)*')), case_sensitive: value },
    { requiredKeys: [] },
  ),
  fc.record({ latitude: value, longitude: value, radius: value }, { requiredKeys: [] }),
);
const conditions = fc.dictionary(
  fc.oneof(pick('title', 'views', 'Title', '_status'), text),
  fc.oneof(
    fc.dictionary(
      fc.oneof(pick('eq', 'gt', 'in', 'notIn', 'matches', 'exists', 'near', 'all_in'), text),
      operand,
      { maxKeys: 3 },
    ),
    value,
  ),
  { maxKeys: 3 },
);
const names = fc.oneof(
  fc.array(fc.oneof(pick('title', 'en', 'pt-BR', 'published', 'draft'), text), { maxLength: 3 }),
  value,
);
const entry = fc.record(
  {
    entity_type: fc.oneof(pick('item', 'item_type', 'upload', 'cda_cache_tags', 'sso_user'), value),
    event_types: fc.oneof(fc.array(fc.oneof(pick('create', 'publish', 'invalidate'), text)), value),
    filter: fc.oneof(filter, value),
    filters: fc.oneof(fc.array(filter, { maxLength: 3 }), value),
    changed_fields: names,
    locales: names,
    record_status: names,
    fields: fc.oneof(conditions, value),
  },
  { requiredKeys: [] },
);
/** Flow control's batch (extension): in range, at its bounds, or not. */
const batch = fc.record(
  {
    window_ms: fc.oneof(pick(10, 9, 600_000, 600_001, 10.5, -1), fc.integer(), value),
    max_events: fc.oneof(pick(1, 0, 1000, 1001, null), fc.integer(), value),
    extra: value,
  },
  { requiredKeys: [] },
);
const attributes = fc.record(
  {
    name: fc.oneof(text, value),
    url: fc.oneof(text, value, fc.webUrl()),
    headers: fc.oneof(fc.dictionary(text, fc.oneof(text, value), { maxKeys: 5 }), value),
    events: fc.oneof(fc.array(entry, { maxLength: 3 }), value),
    custom_payload: fc.oneof(text, value),
    http_basic_user: fc.oneof(text, value),
    http_basic_password: fc.oneof(text, value),
    enabled: fc.oneof(fc.boolean(), value),
    payload_api_version: fc.oneof(pick('3'), value),
    nested_items_in_payload: fc.oneof(fc.boolean(), value),
    auto_retry: fc.oneof(fc.boolean(), value),
    payload_changes: fc.oneof(fc.boolean(), value),
    trace_context: fc.oneof(fc.boolean(), value),
    delivery_order: fc.oneof(pick('any', 'per_entity', 'ordered'), value),
    coalesce: fc.oneof(fc.boolean(), value),
    batch: fc.oneof(batch, value),
    redact_headers: fc.oneof(fc.array(fc.oneof(text, value), { maxLength: 5 }), value),
    signing_secret: value,
    extra: value,
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  fc.record({ data: fc.record({ type: pick('webhook'), attributes }) }),
  fc.record(
    {
      data: fc.record(
        { type: fc.oneof(pick('webhook'), value), id: value, attributes: value },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  ),
  value,
);

/** Bodies of the right shape whose values are arbitrary: they reach the database. */
const tricky = fc.string({
  unit: fc.oneof(
    fc.constantFrom('a', 'é', '😀', '\ud800', '\udc00', '\n', '\t', '{{', '}}', '"', '\\'),
    fc.string({ unit: 'binary', maxLength: 1 }),
  ),
  maxLength: 30,
});
const token = fc.stringMatching(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,20}$/);
const wellShaped = fc.record({
  data: fc.record({
    type: fc.constant('webhook'),
    attributes: fc.record(
      {
        name: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }), tricky),
        url: fc.oneof(
          fc.webUrl({ withQueryParameters: true, withFragments: true }),
          fc.string().map((path) => `https://example.com/${encodeURI(path)}{{entity_type}}`),
        ),
        headers: fc.dictionary(
          token,
          fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), tricky),
          {
            maxKeys: 5,
          },
        ),
        events: fc.array(
          fc.record(
            {
              entity_type: pick('item', 'upload', 'environment'),
              event_types: fc.uniqueArray(pick('create', 'update', 'delete'), { minLength: 1 }),
              filters: fc.array(
                fc.record({
                  entity_type: pick('item_type', 'item', 'environment'),
                  entity_ids: fc.array(fc.string({ unit: 'binary', minLength: 1 }), {
                    minLength: 1,
                  }),
                }),
                { maxLength: 2 },
              ),
              changed_fields: fc.uniqueArray(pick('title', 'views', 'slug'), { minLength: 1 }),
              locales: fc.uniqueArray(pick('en', 'it', 'pt-BR'), { minLength: 1 }),
              record_status: fc.uniqueArray(pick('draft', 'updated', 'published'), {
                minLength: 1,
              }),
              fields: fc.dictionary(
                pick('title', 'views'),
                fc.oneof(
                  pick({ gt: 5 }, { matches: '^a' }, { in: ['a', 'b'] }, { exists: true }),
                  fc.record({ eq: tricky }),
                ),
                { minKeys: 1, maxKeys: 2 },
              ),
            },
            { requiredKeys: ['entity_type', 'event_types', 'filters'] },
          ),
          { maxLength: 3 },
        ),
        custom_payload: fc.oneof(fc.constant(null), fc.string({ unit: 'binary' }), text, tricky),
        http_basic_user: fc.oneof(fc.constant(null), fc.string({ unit: 'binary' })),
        http_basic_password: fc.oneof(fc.constant(null), fc.string({ unit: 'binary' })),
        enabled: fc.boolean(),
        payload_changes: fc.boolean(),
        trace_context: fc.boolean(),
        delivery_order: pick('any', 'per_entity'),
        coalesce: fc.boolean(),
        batch: fc.oneof(
          fc.constant(null),
          fc.record({
            window_ms: fc.integer({ min: 10, max: 600_000 }),
            max_events: fc.integer({ min: 1, max: 1000 }),
          }),
        ),
      },
      { requiredKeys: [...REQUIRED_ATTRIBUTES] },
    ),
  }),
});

async function expectDocumented(response: Response, sent: unknown): Promise<void> {
  const status = response.status;
  const json = (await response.json()) as { data: unknown };
  // Created/updated, invalid JSON:API, or invalid fields: never a 5xx, never a missing route.
  // (The JSON parser is strict: a top-level string or number is refused as 400 INVALID_JSON_BODY.)
  const expected = typeof sent === 'object' && sent !== null ? [200, 201, 422] : [400, 422];
  expect(expected, JSON.stringify(json).slice(0, 500)).toContain(status);
  if (status >= 400) {
    const errors = json.data as { type: string; attributes: { code: string; details: object } }[];
    expect(Array.isArray(errors)).toBe(true);
    for (const error of errors) {
      expect(error.type).toBe('api_error');
      expect(error.attributes.code).toMatch(/^[A-Z_]+$/);
      expect(typeof error.attributes.details).toBe('object');
    }
  }
}

// Hundreds of real HTTP requests each: give them room on a busy machine.
describe('arbitrary webhook bodies', { timeout: 120_000 }, () => {
  it('POST /webhooks never answers 5xx', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(body, async (generated) => {
        await expectDocumented(await post(api, '/webhooks', generated), generated);
      }),
      { numRuns: 300 },
    );
  });

  it('well-shaped bodies with arbitrary values are stored or refused, never a 5xx', async ({
    api,
  }) => {
    let created = 0;
    await fc.assert(
      fc.asyncProperty(wellShaped, async (generated) => {
        const response = await post(api, '/webhooks', generated);
        if (response.status === 201) {
          created += 1;
          const { data } = (await response.json()) as { data: { attributes: unknown } };
          // What was stored is what was sent (headers and events included).
          expect(data.attributes).toMatchObject(
            JSON.parse(JSON.stringify(generated.data.attributes)) as object,
          );
        } else {
          await expectDocumented(response, generated);
        }
      }),
      { numRuns: 400 },
    );
    // The generator must produce valid webhooks often enough for "stored = sent" to be exercised:
    // since field-aware matching refuses conditions on fields the model lacks, about 1 run in 20
    // is valid (seen 7–14 of 200), so 400 runs make about 19, and 5 leaves room for chance (about
    // 1 run in 3,000 would fall below), not for a generator that stopped producing them.
    expect(created).toBeGreaterThanOrEqual(5);
  });

  it('PUT /webhooks/:id never answers 5xx', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(body, async (generated) => {
        await expectDocumented(
          await post(api, `/webhooks/${existingId}`, generated, 'PUT'),
          generated,
        );
      }),
      { numRuns: 200 },
    );
  });
});
