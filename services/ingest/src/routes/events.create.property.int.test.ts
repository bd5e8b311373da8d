import fc from 'fast-check';
import { describe, expect } from 'vitest';
import { fieldEntity, modelEvent, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

const it = appTest(createApp, { role: 'producer' });

it.beforeAll(async ({ api }) => {
  const post = modelEvent('post', {}, [
    fieldEntity('title', 'string', { id: 'f-title' }),
    fieldEntity('n', 'integer', { id: 'f-n' }),
    fieldEntity('blocks', 'rich_text', { id: 'f-blocks' }),
  ]);
  const seed = await send(api, JSON.stringify({ data: post }));
  expect(seed.status).toBe(202);
});

const send = (api: TestApi, body: string) => api.call<unknown>('POST', '/events', body);

/** 202 with one status per event, or a 4xx in the error envelope: never a 500. */
function expectContractAnswer(answer: { status: number; body: unknown }): void {
  if (answer.status === 202) {
    const { data } = answer.body as { data: { type: string; attributes: { status: string } }[] };
    for (const entry of data) expect(['accepted', 'duplicate']).toContain(entry.attributes.status);
    return;
  }
  expect(answer.status).toBeGreaterThanOrEqual(400);
  expect(answer.status).toBeLessThan(500);
  const { data } = answer.body as {
    data: { type: string; attributes: { code: string; details: object } }[];
  };
  expect(data.length).toBeGreaterThan(0);
  for (const entry of data) {
    expect(entry.type).toBe('api_error');
    expect(typeof entry.attributes.code).toBe('string');
    expect(typeof entry.attributes.details).toBe('object');
  }
}

const word = fc.constantFrom('post', 'nope', 'title', 'n', 'blocks', 'main', 'x', '', 'a:b', '1');
/** Objects whose keys shadow Object.prototype's: whatever describes a bad value must treat it as data. */
const shadowing = fc.dictionary(
  fc.constantFrom(
    'toString',
    'valueOf',
    'constructor',
    'toJSON',
    'hasOwnProperty',
    'then',
    'length',
  ),
  fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.constant({})),
  { minKeys: 1, maxKeys: 3 },
);
const anyValue = fc.oneof(fc.jsonValue(), shadowing);
/** Events that are often nearly valid, so the deeper validators are reached too. */
const eventLike = fc.record(
  {
    type: fc.oneof(fc.constant('event'), anyValue),
    id: fc.oneof(fc.uuid(), word, anyValue),
    attributes: fc.record(
      {
        entity_type: fc.oneof(
          fc.constantFrom('item', 'item_type', 'environment', 'upload', 'sso_user'),
          anyValue,
        ),
        event_type: fc.oneof(
          fc.constantFrom('create', 'update', 'delete', 'publish', 'unpublish', 'promote'),
          anyValue,
        ),
        environment: fc.oneof(word, anyValue),
        occurred_at: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc.string(),
        ),
        entity: fc.oneof(
          fc.record(
            {
              type: fc.constantFrom('item', 'item_type', 'environment'),
              id: fc.oneof(word, fc.string()),
              attributes: fc.dictionary(word, anyValue),
              relationships: fc.record({
                item_type: fc.record({
                  data: fc.record({ type: fc.constant('item_type'), id: word }),
                }),
              }),
              meta: fc.dictionary(
                fc.constantFrom('updated_at', 'current_version', 'status'),
                anyValue,
              ),
            },
            { requiredKeys: ['type', 'id'] },
          ),
          anyValue,
        ),
        related_entities: fc.oneof(fc.array(anyValue, { maxLength: 3 }), anyValue),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

describe('POST /events under arbitrary input', () => {
  it('answers arbitrary JSON with a 202 or a 4xx in the envelope, never a 500', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((value) => JSON.stringify(value)),
          fc.jsonValue().map((value) => JSON.stringify({ data: value })),
          fc
            .array(eventLike, { minLength: 1, maxLength: 4 })
            .map((data) => JSON.stringify({ data })),
          eventLike.map((data) => JSON.stringify({ data })),
          // Nested past what the plumbing accepts, in the entity or anywhere else.
          fc.tuple(eventLike, fc.integer({ min: 100, max: 6000 })).map(([event, depth]) =>
            JSON.stringify({
              data: [{ ...event, attributes: { ...event.attributes, entity: 'DEEP' } }],
            }).replace('"DEEP"', `${'['.repeat(depth)}${']'.repeat(depth)}`),
          ),
          fc.string(),
        ),
        async (body) => {
          expectContractAnswer(await send(api, body));
        },
      ),
      { numRuns: 300 },
    );
  });
});
