import { describe, expect } from 'vitest';
import { parseCidrList } from '@herald/contract';
import { createApp } from '@herald/ingest';
import { serveTestApi } from '@herald/testkit/fixtures';
import { randomId, testDeps, waitFor, type TestApi } from '@herald/testkit';
import { pipelineTest } from '@herald/delivery/testing';

// Field-aware matching and `changes` in the payload (extension, docs/api.md, Events and filters;
// What a webhook call sends), end to end: webhooks created with POST /webhooks, events posted to
// POST /events without a previous_entity (compared with the version Herald stored), the calls
// the pipeline makes, and the bodies the receiver gets.
const it = pipelineTest().extend('api', { scope: 'file' }, ({ db, pipeline }, { onCleanup }) =>
  serveTestApi(
    createApp,
    { ...testDeps(db, pipeline.coordination), ssrfAllowCidrs: parseCidrList('127.0.0.0/8') },
    onCleanup,
  ),
);

type Api = TestApi;

interface Sent {
  webhook_id: string;
  event_type: string;
  entity: { id: string; attributes: Record<string, unknown> };
  changes?: unknown;
}

/** An environment (locales en, it) with a draft-mode model: title (localized), views, slug. */
async function environmentWithModel(api: Api): Promise<{ env: string; model: string }> {
  const env = randomId('env').replace(/[^A-Za-z0-9_-]/g, '');
  const model = randomId('m').replace(/[^A-Za-z0-9_-]/g, '');
  const field = (api_key: string, field_type: string, localized = false) => ({
    type: 'field',
    id: `${model}-${api_key}`,
    attributes: { api_key, field_type, localized },
  });
  const answer = await api.call('POST', '/events', {
    data: [
      event(
        'environment',
        'create',
        { type: 'environment', id: env, attributes: { locales: ['en', 'it'] } },
        env,
      ),
      event(
        'item_type',
        'create',
        {
          type: 'item_type',
          id: model,
          attributes: {
            name: 'Article',
            api_key: `a_${model.toLowerCase().replace(/-/g, '_')}`,
            draft_mode_active: true,
          },
        },
        env,
        [field('title', 'string', true), field('views', 'integer'), field('slug', 'slug')],
      ),
    ],
  });
  expect(answer.status).toBe(202);
  return { env, model };
}

function event(
  entityType: string,
  eventType: string,
  entity: unknown,
  environment: string,
  related: unknown[] = [],
  previous?: unknown,
) {
  return {
    type: 'event',
    id: randomId('evt'),
    attributes: {
      entity_type: entityType,
      event_type: eventType,
      environment,
      entity,
      related_entities: related,
      ...(previous !== undefined && { previous_entity: previous }),
    },
  };
}

function record(model: string, id: string, attributes: Record<string, unknown>) {
  return {
    type: 'item',
    id,
    attributes,
    relationships: { item_type: { data: { type: 'item_type', id: model } } },
  };
}

async function createWebhook(
  api: Api,
  pipeline: { runtime: { index: { has(id: string): boolean } } },
  url: string,
  env: string,
  narrowing: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const answer = await api.call<{ data: { id: string; attributes: Record<string, unknown> } }>(
    'POST',
    '/webhooks',
    {
      data: {
        type: 'webhook',
        attributes: {
          name: randomId('hook'),
          url,
          headers: {},
          events: [
            {
              entity_type: 'item',
              event_types: ['create', 'update', 'publish'],
              filters: [{ entity_type: 'environment', entity_ids: [env] }],
              ...narrowing,
            },
          ],
          custom_payload: null,
          http_basic_user: null,
          http_basic_password: null,
          ...extra,
        },
      },
    },
  );
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  // The entry is echoed with its content keys as sent.
  expect((answer.body.data.attributes['events'] as unknown[])[0]).toMatchObject(narrowing);
  const { id } = answer.body.data;
  await waitFor(() => expect(pipeline.runtime.index.has(id)).toBe(true));
  return id;
}

/** The webhooks that got a call for the event, once it has been matched. */
async function matchedWebhooks(api: Api, eventId: string): Promise<string[]> {
  const read = () =>
    api.call<{
      data: { attributes: { matched_at: string | null } };
      included?: { relationships: { webhook: { data: { id: string } } } }[];
    }>('GET', `/events/${eventId}`);
  await waitFor(async () => expect((await read()).body.data.attributes.matched_at).not.toBeNull(), {
    timeout: 10_000,
    interval: 50,
  });
  // Read again: GET /events/:id reads the event and its calls in two statements that may see
  // either side of the match's commit.
  const answer = await read();
  return (answer.body.included ?? []).map((c) => c.relationships.webhook.data.id).sort();
}

/**
 * A test's own environment and model, and `hook`: a webhook there delivering to `url`, its item
 * entry narrowed by `narrowing` (createWebhook).
 */
async function webhooksIn(api: Api, pipeline: Parameters<typeof createWebhook>[1], url: string) {
  const { env, model } = await environmentWithModel(api);
  const hook = (narrowing: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    createWebhook(api, pipeline, url, env, narrowing, extra);
  return { env, model, hook };
}

/** A test's time: a dozen webhooks and events through the API, on a machine maybe busy. */
const TEST_TIMEOUT_MS = 90_000;

describe('field-aware entries, through the API', () => {
  it(
    'match on changed fields, locales, the record status and field conditions against the stored version',
    async ({ api, pipeline, receiver }) => {
      const { env, model, hook } = await webhooksIn(api, pipeline, receiver.url);
      const titleChanged = await hook({ changed_fields: ['title'] }, { payload_changes: true });
      const italian = await hook({ locales: ['it'] });
      const popular = await hook({
        fields: { views: { gt: 10 } },
      });
      const published = await hook({
        record_status: ['published'],
      });
      const plain = await hook({});

      const id = randomId('rec').replace(/[^A-Za-z0-9_-]/g, '');
      const post = async (eventType: string, attributes: Record<string, unknown>) => {
        const e = event('item', eventType, record(model, id, attributes), env);
        const answer = await api.call('POST', '/events', { data: [e] });
        expect(answer.status).toBe(202);
        return matchedWebhooks(api, e.id);
      };

      // New: every field changed (from nothing), in every locale.
      expect(
        await post('create', { title: { en: 'Hello', it: 'Ciao' }, views: 5, slug: 'a' }),
      ).toEqual([titleChanged, italian, plain].sort());
      // Only views changed: neither title nor an Italian value; views is now over 10.
      expect(
        await post('update', { title: { en: 'Hello', it: 'Ciao' }, views: 20, slug: 'a' }),
      ).toEqual([popular, plain].sort());
      // The English title changed: not an Italian change.
      expect(
        await post('update', { title: { en: 'Hi', it: 'Ciao' }, views: 20, slug: 'a' }),
      ).toEqual([titleChanged, popular, plain].sort());
      // The Italian title changed; views drops under 10.
      expect(
        await post('update', { title: { en: 'Hi', it: 'Salve' }, views: 3, slug: 'a' }),
      ).toEqual([titleChanged, italian, plain].sort());
      // Published (a draft-mode model: the status comes with publish). A publish is compared with
      // the version published before, here none: every field is new to the published content.
      expect(
        await post('publish', { title: { en: 'Hi', it: 'Salve' }, views: 3, slug: 'a' }),
      ).toEqual([titleChanged, italian, published, plain].sort());

      // The payload of the webhook with payload_changes: the JSON Patch from the stored version.
      await waitFor(() => {
        const bodies = receiver.requests
          .map((r) => JSON.parse(r.body) as Sent)
          .filter((b) => b.webhook_id === titleChanged && b.entity.id === id);
        expect(bodies.map((b) => b.changes)).toEqual([
          // Attributes come back from jsonb with their keys reordered (shorter keys first).
          [
            { op: 'add', path: '/slug', value: 'a' },
            { op: 'add', path: '/title', value: { en: 'Hello', it: 'Ciao' } },
            { op: 'add', path: '/views', value: 5 },
          ],
          [{ op: 'replace', path: '/title/en', value: 'Hi' }],
          [
            { op: 'replace', path: '/title/it', value: 'Salve' },
            { op: 'replace', path: '/views', value: 3 },
          ],
          [
            { op: 'add', path: '/slug', value: 'a' },
            { op: 'add', path: '/title', value: { en: 'Hi', it: 'Salve' } },
            { op: 'add', path: '/views', value: 3 },
          ],
        ]);
      });
      // Without payload_changes the default payload is as before: no `changes` key.
      const plainBodies = receiver.requests
        .map((r) => JSON.parse(r.body) as Sent)
        .filter((b) => b.webhook_id === plain && b.entity.id === id);
      expect(plainBodies.length).toBe(5);
      for (const body of plainBodies) expect(body).not.toHaveProperty('changes');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'compares with previous_entity when the event carries one, and renders changed_fields in Mustache',
    async ({ api, pipeline, receiver }) => {
      const { env, model, hook } = await webhooksIn(api, pipeline, receiver.url);
      const slugChanged = await hook(
        { changed_fields: ['slug'] },
        { custom_payload: '{"changed":"{{#changed_fields}}{{.}};{{/changed_fields}}"}' },
      );
      const id = randomId('rec').replace(/[^A-Za-z0-9_-]/g, '');
      const created = event(
        'item',
        'create',
        record(model, id, { title: { en: 'A' }, views: 1, slug: 'x' }),
        env,
      );
      expect((await api.call('POST', '/events', { data: [created] })).status).toBe(202);
      expect(await matchedWebhooks(api, created.id)).toEqual([slugChanged]);

      // The stored slug is "x" and stays "x", but the producer says it was "old": its word counts.
      const updated = event(
        'item',
        'update',
        record(model, id, { title: { en: 'B' }, views: 1, slug: 'x' }),
        env,
        [],
        record(model, id, { title: { en: 'B' }, views: 1, slug: 'old' }),
      );
      expect((await api.call('POST', '/events', { data: [updated] })).status).toBe(202);
      expect(await matchedWebhooks(api, updated.id)).toEqual([slugChanged]);
      await waitFor(() => {
        const bodies = receiver.requests
          .filter((r) => r.body.startsWith('{"changed"'))
          .map((r) => r.body);
        expect(bodies, JSON.stringify(receiver.requests.map((r) => r.body).slice(-3))).toContain(
          '{"changed":"slug;title;views;"}',
        );
        expect(bodies).toContain('{"changed":"slug;"}');
      });
    },
    TEST_TIMEOUT_MS,
  );
});
