import { describe, expect } from 'vitest';
import {
  READ_AFTER_HEADER,
  decodeReadAfter,
  eventJobId,
  serializeItem,
  type ModelInfo,
} from '@herald/contract';
import {
  TokenVerifier,
  createEventMatchQueue,
  eventMatchJobId,
  type EventMatchQueue,
  type Redis,
} from '@herald/runtime';
import {
  createPostgresDb,
  findRecord,
  loadBlocks,
  loadModels,
  readCommitPosition,
  textSearchConfig,
} from '@herald/store';
import {
  createTestToken,
  fieldEntity,
  itemEvent,
  modelEvent as modelEventOf,
  modelWithRecordEvents,
  randomId,
  serve,
  testDeps,
  type TestDb,
  type TestDeps,
  type TestServer,
} from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// The app on its file's database and Redis, a producer's token in `api`: the tests below read
// them from these variables, set once the fixtures are up.
const it = appTest(createApp, { role: 'producer' });

let t: TestDb;
let redis: Redis;
let queue: EventMatchQueue;
let server: TestServer;
let token: string;
let readOnlyToken: string;
let deps: TestDeps;

it.beforeAll(async ({ testDb, redis: fileRedis, server: served, deps: appDeps, api }) => {
  [t, redis, server, deps] = [testDb, fileRedis, served, appDeps];
  queue = deps.eventMatchQueue;
  token = api.token;
  readOnlyToken = await createTestToken(t.db, 'read_only');
  // Models shared by the tests below: a draft-mode post with blocks, a model without draft mode.
  const response = await post([
    modelEvent('section', 'section', { modular_block: true }, [
      field('heading', 'string'),
      field('body', 'text'),
      field('inner', 'rich_text'),
    ]),
    modelEvent('post', 'post', { draft_mode_active: true }, [
      field('title', 'string'),
      field('views', 'integer'),
      field('tagline', 'string', true),
      field('content', 'rich_text'),
      field('hero', 'single_block'),
      field('story', 'structured_text'),
      field('published_on', 'date'),
    ]),
    modelEvent('page', 'page', { draft_mode_active: false }, [field('title', 'string')]),
    modelEvent('ranked', 'ranked', { sortable: true }, [field('title', 'string')]),
  ]);
  expect(response.status).toBe(202);
});

const field = (apiKey: string, fieldType: string, localized = false) =>
  fieldEntity(apiKey, fieldType, { localized });

const modelEvent = (
  id: string,
  apiKey: string,
  flags: Record<string, boolean>,
  fields: unknown[],
  eventType = 'create',
) => modelEventOf(id, flags, fields, { apiKey, eventType });

/** The 202 body or the error envelope. */
interface Entry {
  type: string;
  id: string;
  attributes: {
    status?: string;
    code?: string;
    transient?: boolean;
    details?: { field?: string; code?: string };
  };
}
interface Answer {
  status: number;
  headers: Headers;
  body: { data: Entry[]; meta?: { read_after?: string } };
}

async function post(
  data: unknown,
  options: { token?: string; url?: string; raw?: string } = {},
): Promise<Answer> {
  const response = await fetch(`${options.url ?? server.url}/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${options.token ?? token}`,
      'content-type': 'application/json',
    },
    body: options.raw ?? JSON.stringify({ data }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Answer['body'],
  };
}

async function countEvents(): Promise<number> {
  const { rows } = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM events');
  return Number(rows[0]!.n);
}

const fieldsOf = (body: Answer['body']): string[] =>
  body.data.map((entry) => entry.attributes.details?.field ?? '');

describe('POST /events acceptance', () => {
  it('needs the producer (or admin) role', async () => {
    const answer = await post([itemEvent('create', randomId('r'), { title: 'x' })], {
      token: readOnlyToken,
    });
    expect(answer.status).toBe(403);
    expect(answer.body.data[0]!.attributes.code).toBe('INSUFFICIENT_PERMISSIONS');
  });

  it('accepts a single event object, stores it before the 202 and enqueues its id only', async () => {
    const id = randomId('r');
    const event = itemEvent('create', id, { title: 'Hello' }, { eventId: `evt:${randomId()}` });
    const answer = await post(event);
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      data: [{ type: 'event', id: event.id, attributes: { status: 'accepted' } }],
      meta: { read_after: expect.any(String) as string },
    });
    // Visible to the store as soon as the 202 is back: no polling.
    const record = await findRecord(t.db, 'main', id);
    expect(record?.currentAttributes).toEqual({ title: 'Hello' });
    const job = await queue.getJob(eventJobId(event.id));
    expect(job?.data).toEqual({ eventIds: [event.id] });
    expect(job?.id).toBe(event.id.replaceAll(':', '%'));
  });

  it('answers the position of its commit: the read-after token, in a header and in meta', async () => {
    const before = await readCommitPosition(t.db);
    const answer = await post(itemEvent('create', randomId('r'), { title: 'x' }));
    const after = await readCommitPosition(t.db);
    expect(answer.status).toBe(202);
    const token = answer.headers.get(READ_AFTER_HEADER);
    expect(answer.body.meta).toEqual({ read_after: token });
    const position = decodeReadAfter(token!);
    // Read after the commit: past every commit before the request, and not past the present.
    expect(position).toBeGreaterThan(before);
    expect(position).toBeLessThanOrEqual(after);
    // A batch of duplicates commits nothing new, and still answers where the stored ones are.
    const eventId = randomId('evt');
    const again = await post(itemEvent('create', randomId('r'), { title: 'y' }, { eventId }));
    const duplicate = await post(itemEvent('create', randomId('r'), { title: 'y' }, { eventId }));
    expect(duplicate.body.data[0]!.attributes.status).toBe('duplicate');
    expect(decodeReadAfter(duplicate.body.meta!.read_after!)).toBeGreaterThanOrEqual(
      decodeReadAfter(again.body.meta!.read_after!)!,
    );
  });

  it('enqueues a batch as one match job', async () => {
    const events = [1, 2, 3].map((n) =>
      itemEvent('create', randomId('r'), { title: `t${n}` }, { eventId: randomId('evt') }),
    );
    const answer = await post(events);
    expect(answer.status).toBe(202);
    const ids = events.map((event) => event.id);
    expect((await queue.getJob(eventMatchJobId(ids)))?.data).toEqual({ eventIds: ids });
    for (const id of ids) expect(await queue.getJob(eventJobId(id))).toBeUndefined();
  });

  it('generates an id when the event has none', async () => {
    const event: Partial<ReturnType<typeof itemEvent>> = itemEvent('create', randomId('r'), {
      title: 'x',
    });
    delete event.id;
    const answer = await post([event]);
    expect(answer.status).toBe(202);
    expect(answer.body.data[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a repeated id as duplicate, in a later request and within one batch', async () => {
    const id = randomId('r');
    const event = itemEvent('create', id, { title: 'first' });
    const again = { ...itemEvent('update', id, { title: 'second' }), id: event.id };
    const first = await post([event, again]);
    expect(first.body.data.map((d) => d.attributes.status)).toEqual(['accepted', 'duplicate']);
    const second = await post([again]);
    expect(second.body.data[0]!.attributes.status).toBe('duplicate');
    expect((await findRecord(t.db, 'main', id))?.currentAttributes).toEqual({ title: 'first' });
    const { rows } = await t.db.query('SELECT id FROM events WHERE id = $1', [event.id]);
    expect(rows).toHaveLength(1);
  });

  // `page` batches take the one-statement fast path, `post` ones (block fields) the transaction.
  it.each(['post', 'page'])('accepts concurrent duplicates exactly once (%s)', async (model) => {
    const record = randomId('r');
    const eventId = randomId('evt');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        post([
          { ...itemEvent('update', record, { title: `try ${n}` }, { model }), id: eventId },
          itemEvent('create', randomId('r'), { title: 'other' }, { model }),
        ]),
      ),
    );
    expect(answers.every((a) => a.status === 202)).toBe(true);
    const statuses = answers.map((a) => a.body.data[0]!.attributes.status);
    expect(statuses.filter((s) => s === 'accepted')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(11);
    const { rows } = await t.db.query('SELECT id FROM events WHERE id = $1', [eventId]);
    expect(rows).toHaveLength(1);
  });

  it('stores nothing of a batch with one invalid event', async () => {
    const before = await countEvents();
    const ids = [randomId('r'), randomId('r')];
    const answer = await post([
      itemEvent('create', ids[0]!, { title: 'ok' }),
      itemEvent('create', ids[1]!, { title: 'ok' }),
      itemEvent('create', randomId('r'), { nope: 1 }),
    ]);
    expect(answer.status).toBe(422);
    expect(fieldsOf(answer.body)).toEqual(['data.2.attributes.entity.attributes.nope']);
    expect(await countEvents()).toBe(before);
    expect(await findRecord(t.db, 'main', ids[0]!)).toBeNull();
  });

  it('answers 503 SERVICE_UNAVAILABLE (transient) when Postgres is unreachable', async () => {
    const db = createPostgresDb({ connectionString: 'postgres://postgres@127.0.0.1:1/test' });
    const downDeps = testDeps(db, redis);
    const downQueue = createEventMatchQueue(downDeps.coordination, downDeps.logger);
    // Tokens are verified on the test's database, so that the request reaches POST /events.
    const tokens = new TokenVerifier(t.db, { cacheTtlMs: 0 });
    const down = await serve(
      createApp({ ...downDeps, tokens, eventMatchQueue: downQueue, enqueueTimeoutMs: 100 }),
    );
    try {
      const answer = await post([itemEvent('create', randomId('r'), { title: 'x' })], {
        url: down.url,
        token,
      });
      expect(answer.status).toBe(503);
      expect(answer.body.data[0]!.attributes).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        transient: true,
      });
    } finally {
      await down.close();
      await downQueue.close();
      await db.close();
    }
  });
});

describe('POST /events validation (422, nothing stored)', () => {
  const tooBig = 'x'.repeat(310 * 1024);
  const cases: [string, unknown, string | undefined, string][] = [
    ['not a JSON:API document', '__raw__[1,2]', undefined, 'INVALID_FORMAT'],
    ['an empty batch', [], 'data', 'VALIDATION_LENGTH'],
    [
      'over 1000 events',
      Array.from({ length: 1001 }, () => itemEvent('create', 'a', {})),
      'data',
      'VALIDATION_LENGTH',
    ],
    [
      'a wrong resource type',
      [{ type: 'evt', attributes: {} }],
      'data.0.type',
      'VALIDATION_INCLUSION',
    ],
    [
      'a missing entity_type',
      [{ type: 'event', attributes: { event_type: 'create', entity: { type: 'item', id: 'a' } } }],
      'data.0.attributes.entity_type',
      'VALIDATION_REQUIRED',
    ],
    [
      'an unknown entity_type',
      [
        {
          type: 'event',
          attributes: { entity_type: 'blog', event_type: 'create', entity: { type: 'x', id: 'a' } },
        },
      ],
      'data.0.attributes.entity_type',
      'VALIDATION_INCLUSION',
    ],
    [
      'an event type of another entity type',
      [
        {
          type: 'event',
          attributes: {
            entity_type: 'item_type',
            event_type: 'publish',
            entity: { type: 'item_type', id: 'a' },
          },
        },
      ],
      'data.0.attributes.event_type',
      'VALIDATION_INCLUSION',
    ],
    [
      'an event_type that is an object with toString and valueOf keys',
      [
        {
          type: 'event',
          attributes: {
            entity_type: 'item',
            event_type: { toString: 1, valueOf: 'x' },
            entity: { type: 'item', id: 'a' },
          },
        },
      ],
      'data.0.attributes.event_type',
      'VALIDATION_INCLUSION',
    ],
    [
      'a lone surrogate in a string field (Postgres refuses it in jsonb)',
      [itemEvent('create', 'a', { title: 'a\ud800b' })],
      'data.0.attributes.entity.attributes.title',
      'VALIDATION_FORMAT',
    ],
    [
      'a meta.position beyond a 32-bit integer (the position column)',
      [itemEvent('create', 'a', {}, { meta: { position: 2 ** 31 } })],
      'data.0.attributes.entity.meta.position',
      'VALIDATION_LENGTH',
    ],
    [
      'a position attribute beyond a 32-bit integer',
      [itemEvent('create', 'a', { position: 2 ** 31 }, { model: 'ranked' })],
      'data.0.attributes.entity.attributes.position',
      'VALIDATION_LENGTH',
    ],
    [
      'a meta time that its zone carries past the year 9999',
      [itemEvent('create', 'a', {}, { meta: { updated_at: '9999-12-31T23:59:59-14:00' } })],
      'data.0.attributes.entity.meta.updated_at',
      'VALIDATION_FORMAT',
    ],
    [
      'an occurred_at in the year 0000',
      [
        {
          ...itemEvent('create', 'a', {}),
          attributes: {
            ...itemEvent('create', 'a', {}).attributes,
            occurred_at: '0000-06-01T00:00:00Z',
          },
        },
      ],
      'data.0.attributes.occurred_at',
      'VALIDATION_FORMAT',
    ],
    [
      'a field position beyond a 32-bit integer',
      [
        modelEvent('huge', 'huge', {}, [
          {
            ...field('title', 'string'),
            attributes: { api_key: 'title', field_type: 'string', position: -(2 ** 31) - 1 },
          },
        ]),
      ],
      'data.0.attributes.related_entities.0.attributes.position',
      'VALIDATION_LENGTH',
    ],
    [
      'a malformed event id',
      [{ ...itemEvent('create', 'a', {}), id: 'a b' }],
      'data.0.id',
      'VALIDATION_FORMAT',
    ],
    [
      'a malformed record id',
      [itemEvent('create', 'a/b', {})],
      'data.0.attributes.entity.id',
      'VALIDATION_FORMAT',
    ],
    [
      'an entity over 300 KB',
      [itemEvent('create', 'a', { title: tooBig })],
      'data.0.attributes.entity',
      'VALIDATION_LENGTH',
    ],
    [
      'a malformed occurred_at',
      [
        {
          ...itemEvent('create', 'a', {}),
          attributes: { ...itemEvent('create', 'a', {}).attributes, occurred_at: 'yesterday' },
        },
      ],
      'data.0.attributes.occurred_at',
      'VALIDATION_FORMAT',
    ],
    [
      'an unknown model',
      [itemEvent('create', 'a', {}, { model: 'nope' })],
      'data.0.attributes.entity.relationships.item_type.data.id',
      'VALIDATION_INCLUSION',
    ],
    [
      'a block model as a record',
      [itemEvent('create', 'a', {}, { model: 'section' })],
      'data.0.attributes.entity.relationships.item_type.data.id',
      'VALIDATION_INCLUSION',
    ],
    [
      'an unknown field',
      [itemEvent('create', 'a', { subtitle: 'x' })],
      'data.0.attributes.entity.attributes.subtitle',
      'VALIDATION_INCLUSION',
    ],
    [
      'a string for an integer field',
      [itemEvent('create', 'a', { views: '3' })],
      'data.0.attributes.entity.attributes.views',
      'VALIDATION_TYPE',
    ],
    [
      'a malformed date',
      [itemEvent('create', 'a', { published_on: '2026-13-45x' })],
      'data.0.attributes.entity.attributes.published_on',
      'VALIDATION_TYPE',
    ],
    [
      'a plain value for a localized field',
      [itemEvent('create', 'a', { tagline: 'x' })],
      'data.0.attributes.entity.attributes.tagline',
      'VALIDATION_TYPE',
    ],
    [
      'an unknown locale',
      [itemEvent('create', 'a', { tagline: { fr: 'x' } })],
      'data.0.attributes.entity.attributes.tagline.fr',
      'VALIDATION_INCLUSION',
    ],
    [
      'a non-array rich_text',
      [itemEvent('create', 'a', { content: 'b1' })],
      'data.0.attributes.entity.attributes.content',
      'VALIDATION_TYPE',
    ],
    [
      'a block without an id',
      [
        itemEvent('create', 'a', {
          content: [
            {
              type: 'item',
              attributes: {},
              relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
            },
          ],
        }),
      ],
      'data.0.attributes.entity.attributes.content.0.id',
      'VALIDATION_REQUIRED',
    ],
    [
      'a block of a non-block model',
      [
        itemEvent('create', 'a', {
          hero: {
            type: 'item',
            id: 'b1',
            attributes: {},
            relationships: { item_type: { data: { type: 'item_type', id: 'page' } } },
          },
        }),
      ],
      'data.0.attributes.entity.attributes.hero.relationships.item_type.data.id',
      'VALIDATION_INCLUSION',
    ],
    [
      'a wrong value inside a nested block',
      [
        itemEvent('create', 'a', {
          content: [
            {
              type: 'item',
              id: 'b1',
              attributes: { heading: 7 },
              relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
            },
          ],
        }),
      ],
      'data.0.attributes.entity.attributes.content.0.attributes.heading',
      'VALIDATION_TYPE',
    ],
    [
      'an unknown environment',
      [itemEvent('create', 'a', {}, { environment: 'nowhere' })],
      'data.0.attributes.environment',
      'VALIDATION_INCLUSION',
    ],
    [
      'a model api_key already taken',
      [modelEvent('other-post', 'post', {}, [])],
      'data.0.attributes.entity.attributes.api_key',
      'VALIDATION_UNIQUENESS',
    ],
    [
      'two fields with one api_key',
      [modelEvent('twin', 'twin', {}, [field('a', 'string'), field('a', 'text')])],
      'data.0.attributes.related_entities',
      'VALIDATION_UNIQUENESS',
    ],
    [
      'an unknown field type',
      [modelEvent('weird', 'weird', {}, [field('a', 'hologram')])],
      'data.0.attributes.related_entities.0.attributes.field_type',
      'VALIDATION_INCLUSION',
    ],
    [
      'deleting the primary environment',
      [
        {
          type: 'event',
          attributes: {
            entity_type: 'environment',
            event_type: 'delete',
            entity: { type: 'environment', id: 'main' },
          },
        },
      ],
      'data.0.attributes.entity.id',
      'VALIDATION_INCLUSION',
    ],
    [
      'an environment event naming two environments',
      [
        {
          type: 'event',
          attributes: {
            entity_type: 'environment',
            event_type: 'create',
            environment: 'main',
            entity: { type: 'environment', id: 'other' },
          },
        },
      ],
      'data.0.attributes.environment',
      'VALIDATION_INCLUSION',
    ],
    [
      'a NUL character',
      [itemEvent('create', 'a', { title: 'a\u0000b' })],
      undefined,
      'VALIDATION_FORMAT',
    ],
  ];

  it.each(cases)('rejects %s', async (_name, data, fieldName, code) => {
    const before = await countEvents();
    const raw = typeof data === 'string' && data.startsWith('__raw__') ? data.slice(7) : undefined;
    const answer = await post(data, raw ? { raw } : {});
    expect(answer.status).toBe(422);
    const first = answer.body.data[0]!;
    expect(first.type).toBe('api_error');
    if (code === 'INVALID_FORMAT') {
      expect(first.attributes.code).toBe('INVALID_FORMAT');
    } else {
      expect(first.attributes.code).toBe('INVALID_FIELD');
      expect(first.attributes.details?.code).toBe(code);
      if (fieldName) expect(fieldsOf(answer.body)).toContain(fieldName);
    }
    expect(await countEvents()).toBe(before);
  });
});

async function record(id: string, environment = 'main') {
  const stored = await findRecord(t.db, environment, id);
  if (!stored) throw new Error(`no record ${id}`);
  return stored;
}

describe('the record store', () => {
  it('follows the lifecycle of a draft-mode model', async () => {
    const id = randomId('r');
    const at = (s: string) => ({ updated_at: `2026-05-01T10:00:${s}Z` });
    await post([
      itemEvent(
        'create',
        id,
        { title: 'v1' },
        { meta: { ...at('00'), created_at: '2026-05-01T09:00:00Z' } },
      ),
    ]);
    let r = await record(id);
    expect(r.status).toBe('draft');
    expect(r.publishedAttributes).toBeNull();
    expect(serializeItem(r, { version: 'published' })).toBeNull();
    expect(r.createdAt.toISOString()).toBe('2026-05-01T09:00:00.000Z');

    await post([
      itemEvent(
        'publish',
        id,
        { title: 'v1' },
        { meta: { ...at('01'), published_at: '2026-05-01T10:00:01Z' } },
      ),
    ]);
    r = await record(id);
    expect(r.status).toBe('published');
    expect(r.publishedAttributes).toEqual({ title: 'v1' });
    expect(r.publishedAt?.toISOString()).toBe('2026-05-01T10:00:01.000Z');
    expect(r.firstPublishedAt?.toISOString()).toBe('2026-05-01T10:00:01.000Z');

    await post([itemEvent('update', id, { title: 'v2' }, { meta: at('02') })]);
    r = await record(id);
    expect(r.status).toBe('updated');
    expect(r.currentAttributes).toEqual({ title: 'v2' });
    expect(r.publishedAttributes).toEqual({ title: 'v1' });
    expect(serializeItem(r, { version: 'published' })?.attributes).toEqual({ title: 'v1' });
    expect(serializeItem(r, { version: 'current' })?.meta.status).toBe('updated');

    const before = Date.now();
    await post([itemEvent('publish', id, { title: 'v2' }, { meta: at('03') })]);
    r = await record(id);
    expect(r.status).toBe('published');
    expect(r.publishedAttributes).toEqual({ title: 'v2' });
    // No published_at in meta → the acceptance time; first_published_at keeps the first one.
    expect(r.publishedAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(r.firstPublishedAt?.toISOString()).toBe('2026-05-01T10:00:01.000Z');

    await post([itemEvent('unpublish', id, { title: 'v2' }, { meta: at('04') })]);
    r = await record(id);
    expect(r.status).toBe('draft');
    expect(r.publishedAttributes).toBeNull();
    expect(r.publishedAt).toBeNull();

    await post([itemEvent('delete', id, { title: 'v2' }, { meta: at('05') })]);
    expect(await findRecord(t.db, 'main', id)).toBeNull();
  });

  it('publishes every save of a model without draft mode', async () => {
    const id = randomId('r');
    await post([itemEvent('create', id, { title: 'one' }, { model: 'page' })]);
    let r = await record(id);
    expect(r.status).toBe('published');
    expect(r.publishedAttributes).toEqual({ title: 'one' });
    expect(r.firstPublishedAt).not.toBeNull();
    const first = r.firstPublishedAt;
    await post([itemEvent('update', id, { title: 'two' }, { model: 'page' })]);
    r = await record(id);
    expect(r.status).toBe('published');
    expect(r.publishedAttributes).toEqual({ title: 'two' });
    expect(r.firstPublishedAt).toEqual(first);
  });

  it('applies several events on one record in one batch in order', async () => {
    const id = randomId('r');
    const answer = await post([
      itemEvent('create', id, { title: 'a' }, { meta: { updated_at: '2026-06-01T00:00:00Z' } }),
      itemEvent('publish', id, { title: 'a' }, { meta: { updated_at: '2026-06-01T00:00:01Z' } }),
      itemEvent('update', id, { title: 'b' }, { meta: { updated_at: '2026-06-01T00:00:02Z' } }),
    ]);
    expect(answer.status).toBe(202);
    const r = await record(id);
    expect(r.status).toBe('updated');
    expect(r.currentAttributes).toEqual({ title: 'b' });
    expect(r.publishedAttributes).toEqual({ title: 'a' });
  });

  it('ignores stale events on the fast path too', async () => {
    const id = randomId('r');
    const meta = (updated_at: string) => ({ model: 'page', meta: { updated_at } });
    await post([itemEvent('create', id, { title: 'new' }, meta('2026-07-01T00:00:10Z'))]);
    await post([itemEvent('update', id, { title: 'old' }, meta('2026-07-01T00:00:05Z'))]);
    const r = await record(id);
    expect(r.currentAttributes).toEqual({ title: 'new' });
    expect(r.publishedAttributes).toEqual({ title: 'new' });
  });

  it('ignores stale events but still accepts them for delivery', async () => {
    const id = randomId('r');
    await post([
      itemEvent(
        'create',
        id,
        { title: 'new' },
        { meta: { updated_at: '2026-07-01T00:00:10Z', current_version: '12' } },
      ),
    ]);
    const older = itemEvent(
      'update',
      id,
      { title: 'older' },
      { meta: { updated_at: '2026-07-01T00:00:05Z' } },
    );
    const sameTimeOlderVersion = itemEvent(
      'update',
      id,
      { title: 'v9' },
      { meta: { updated_at: '2026-07-01T00:00:10Z', current_version: '9' } },
    );
    const answer = await post([older, sameTimeOlderVersion]);
    expect(answer.body.data.map((d) => d.attributes.status)).toEqual(['accepted', 'accepted']);
    expect((await record(id)).currentAttributes).toEqual({ title: 'new' });
    const { rows } = await t.db.query('SELECT id FROM events WHERE id = ANY($1)', [
      [older.id, sameTimeOlderVersion.id],
    ]);
    expect(rows).toHaveLength(2);

    await post([itemEvent('delete', id, {}, { meta: { updated_at: '2026-07-01T00:00:20Z' } })]);
    await post([
      itemEvent(
        'update',
        id,
        { title: 'zombie' },
        { meta: { updated_at: '2026-07-01T00:00:15Z' } },
      ),
    ]);
    expect(await findRecord(t.db, 'main', id)).toBeNull();
  });

  it('extracts expanded blocks recursively and keeps ids in the parent', async () => {
    const id = randomId('r');
    const block = (blockId: string, attributes: Record<string, unknown>) => ({
      type: 'item',
      id: blockId,
      attributes,
      relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
    });
    const [b1, b2, b3, b4] = [randomId('b'), randomId('b'), randomId('b'), randomId('b')];
    const attributes = {
      title: 'Parent',
      content: [block(b1, { heading: 'Zebras', inner: [block(b2, { body: 'nested giraffes' })] })],
      hero: block(b3, { heading: 'hero penguins' }),
      story: {
        schema: 'dast',
        document: {
          type: 'root',
          children: [
            { type: 'paragraph', children: [{ type: 'span', value: 'walruses' }] },
            { type: 'block', item: block(b4, { heading: 'otters' }) },
          ],
        },
      },
      tagline: { en: 'localized flamingos' },
    };
    expect((await post([itemEvent('create', id, attributes)])).status).toBe(202);
    const r = await record(id);
    expect(r.currentAttributes).toMatchObject({
      content: [b1],
      hero: b3,
      story: { document: { children: [{}, { type: 'block', item: b4 }] } },
    });
    const blocks = await loadBlocks(t.db, 'main', [id]);
    expect([...blocks.keys()].sort()).toEqual([b1, b2, b3, b4].sort());
    expect(blocks.get(b2)).toMatchObject({ isBlock: true, rootId: id });
    expect(blocks.get(b1)?.currentAttributes).toEqual({ heading: 'Zebras', inner: [b2] });

    const models = new Map<string, ModelInfo>(await loadModels(t.db, 'main', ['post', 'section']));
    const nested = serializeItem(r, { version: 'current', nested: true, blocks, models });
    expect(nested?.attributes['content']).toEqual([
      {
        type: 'item',
        id: b1,
        attributes: {
          heading: 'Zebras',
          inner: [
            {
              type: 'item',
              id: b2,
              attributes: { body: 'nested giraffes' },
              relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
            },
          ],
        },
        relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
      },
    ]);

    const search = async (word: string, version = 'current') => {
      const { rows } = await t.db.query<{ record_id: string }>(
        `SELECT record_id FROM record_texts WHERE environment = 'main' AND locale = 'en'
           AND version = $2 AND document @@ websearch_to_tsquery($3::regconfig, $1)`,
        [word, version, textSearchConfig('en')],
      );
      return rows.map((row) => row.record_id);
    };
    for (const word of ['parent', 'zebra', 'giraffe', 'penguin', 'walrus', 'otter', 'flamingo']) {
      expect(await search(word)).toEqual([id]);
    }
    expect(await search('zebra', 'published')).toEqual([]);

    // Publishing copies the blocks; an update dropping a block keeps it for the published version.
    await post([itemEvent('publish', id, attributes)]);
    expect(await search('giraffe', 'published')).toEqual([id]);
    const { content: _dropped, ...withoutContent } = attributes;
    await post([itemEvent('update', id, { ...withoutContent, content: [] })]);
    let after = await loadBlocks(t.db, 'main', [id]);
    expect(after.get(b1)?.currentAttributes).toBeNull();
    expect(after.get(b1)?.publishedAttributes).toEqual({ heading: 'Zebras', inner: [b2] });
    expect(await search('giraffe')).toEqual([]);
    expect(await search('giraffe', 'published')).toEqual([id]);
    await post([itemEvent('publish', id, { ...withoutContent, content: [] })]);
    after = await loadBlocks(t.db, 'main', [id]);
    expect(after.has(b1)).toBe(false);
    expect(after.has(b2)).toBe(false);
    expect(after.has(b3)).toBe(true);

    // Blocks given by id keep their stored content (and their text).
    await post([itemEvent('update', id, { title: 'Parent', hero: b3 })]);
    expect((await loadBlocks(t.db, 'main', [id])).get(b3)?.currentAttributes).toEqual({
      heading: 'hero penguins',
    });
    expect(await search('penguin')).toEqual([id]);

    await post([itemEvent('delete', id, {})]);
    expect((await loadBlocks(t.db, 'main', [id])).size).toBe(0);
  });

  it('deleting a model removes its records', async () => {
    const id = randomId('r');
    await post([
      modelEvent('temp', 'temp', {}, [field('title', 'string')]),
      itemEvent('create', id, { title: 'short-lived' }, { model: 'temp' }),
    ]);
    expect(await findRecord(t.db, 'main', id)).not.toBeNull();
    await post([modelEvent('temp', 'temp', {}, [], 'delete')]);
    expect(await findRecord(t.db, 'main', id)).toBeNull();
  });

  it('creates environments with locales, promotes and deletes them', async () => {
    const env = randomId('env').replaceAll('_', '-');
    const environmentEvent = (eventType: string, locales?: string[]) => ({
      type: 'event',
      attributes: {
        entity_type: 'environment',
        event_type: eventType,
        entity: { type: 'environment', id: env, attributes: locales ? { locales } : {} },
      },
    });
    const id = randomId('r');
    const answer = await post([
      environmentEvent('create', ['it', 'en']),
      {
        ...modelEvent('m', 'article', {}, [field('title', 'string', true)]),
        attributes: {
          ...modelEvent('m', 'article', {}, [field('title', 'string', true)]).attributes,
          environment: env,
        },
      },
      itemEvent(
        'create',
        id,
        { title: { it: 'Ciao cani', en: 'Hello dogs' } },
        { model: 'm', environment: env },
      ),
    ]);
    expect(answer.status).toBe(202);
    const { rows: envs } = await t.db.query<{ locales: string[]; is_primary: boolean }>(
      'SELECT locales, is_primary FROM environments WHERE id = $1',
      [env],
    );
    expect(envs[0]).toEqual({ locales: ['it', 'en'], is_primary: false });
    const { rows: texts } = await t.db.query<{ locale: string }>(
      `SELECT locale FROM record_texts WHERE environment = $1 AND record_id = $2 AND version = 'current' AND document @@ websearch_to_tsquery('italian', 'cani') ORDER BY locale`,
      [env, id],
    );
    expect(texts.map((row) => row.locale)).toEqual(['it']);

    expect((await post([environmentEvent('promote')])).status).toBe(202);
    const { rows: primary } = await t.db.query<{ id: string }>(
      'SELECT id FROM environments WHERE is_primary',
    );
    expect(primary.map((row) => row.id)).toEqual([env]);
    expect(
      (
        await post([
          {
            ...environmentEvent('promote'),
            attributes: {
              ...environmentEvent('promote').attributes,
              entity: { type: 'environment', id: 'main' },
            },
          },
        ])
      ).status,
    ).toBe(202);

    expect((await post([environmentEvent('delete')])).status).toBe(202);
    expect(await findRecord(t.db, env, id)).toBeNull();
  });

  it('accepts the other entity types without storing records', async () => {
    const answer = await post([
      {
        type: 'event',
        attributes: {
          entity_type: 'upload',
          event_type: 'create',
          entity: { type: 'upload', id: 'u1', attributes: { url: 'x' } },
        },
      },
      {
        type: 'event',
        attributes: {
          entity_type: 'build_trigger',
          event_type: 'deploy_succeeded',
          entity: { type: 'build_trigger', id: '7' },
        },
      },
      {
        type: 'event',
        attributes: {
          entity_type: 'cda_cache_tags',
          event_type: 'invalidate',
          entity: { type: 'cda_cache_tags', id: 'tags' },
        },
      },
    ]);
    expect(answer.status).toBe(202);
    const { rows } = await t.db.query<{ entity_type: string; is_environment_primary: boolean }>(
      'SELECT entity_type, is_environment_primary FROM events WHERE id = ANY($1) ORDER BY seq',
      [answer.body.data.map((d) => d.id)],
    );
    expect(rows).toEqual([
      { entity_type: 'upload', is_environment_primary: true },
      { entity_type: 'build_trigger', is_environment_primary: true },
      { entity_type: 'cda_cache_tags', is_environment_primary: true },
    ]);
  });
});

describe('item deletes that name only their record', () => {
  /** A model whose id and api_key differ, with one record per id given. */
  async function modelWithRecords(...ids: string[]) {
    const { model, events } = modelWithRecordEvents(ids);
    expect((await post(events)).status).toBe(202);
    return model;
  }

  async function eventModels(ids: string[]) {
    const { rows } = await t.db.query<{
      id: string;
      item_type_id: string | null;
      api_key: string | null;
    }>(`SELECT id, item_type_id, item_type_api_key AS api_key FROM events WHERE id = ANY($1)`, [
      ids,
    ]);
    return Object.fromEntries(rows.map(({ id, ...model }) => [id, model]));
  }

  it('store the model of the record, as the batch leaves it, on the event row', async () => {
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((n) => randomId(n));
    const model = await modelWithRecords(a!, b!, c!);
    const env = randomId('env').replaceAll('_', '-');
    const sameModel = modelEvent(model.id, model.apiKey, {}, [field('title', 'string')]);
    // d exists in another environment only.
    const setup = await post([
      {
        type: 'event',
        attributes: {
          entity_type: 'environment',
          event_type: 'create',
          entity: { type: 'environment', id: env, attributes: { locales: ['en'] } },
        },
      },
      { ...sameModel, attributes: { ...sameModel.attributes, environment: env } },
      itemEvent('create', d!, { title: 'd' }, { model: model.id, environment: env }),
    ]);
    expect(setup.status).toBe(202);

    const batch = {
      // Stored records.
      a: itemEvent('delete', a!, {}, { model: null }),
      b: itemEvent('delete', b!, {}, { model: null }),
      // A model named by the producer is kept, even against the stored record's.
      c: itemEvent('delete', c!, {}, { model: 'page' }),
      // The record is the one of the event's environment: main has no d.
      dHere: itemEvent('delete', d!, {}, { model: null }),
      dThere: itemEvent('delete', d!, {}, { model: null, environment: env }),
      // An unknown record: the event is stored without a model, as before.
      unknown: itemEvent('delete', randomId('r'), {}, { model: null }),
      // A record the batch creates before deleting it.
      eCreate: itemEvent('create', e!, { title: 'e' }, { model: model.id }),
      eDelete: itemEvent('delete', e!, {}, { model: null }),
    };
    const answer = await post(Object.values(batch));
    expect(answer.status).toBe(202);
    expect(new Set(answer.body.data.map((entry) => entry.attributes.status))).toEqual(
      new Set(['accepted']),
    );
    const stored = { item_type_id: model.id, api_key: model.apiKey };
    const none = { item_type_id: null, api_key: null };
    const byEvent = await eventModels(Object.values(batch).map((event) => event.id));
    expect(Object.fromEntries(Object.entries(batch).map(([k, ev]) => [k, byEvent[ev.id]]))).toEqual(
      {
        a: stored,
        b: stored,
        c: { item_type_id: 'page', api_key: 'page' },
        dHere: none,
        dThere: stored,
        unknown: none,
        eCreate: stored,
        eDelete: stored,
      },
    );
    for (const id of [a!, b!, c!, e!]) expect(await findRecord(t.db, 'main', id)).toBeNull();
    expect(await findRecord(t.db, env, d!)).toBeNull();
  });
});

describe('metrics', () => {
  it('counts events by entity type, event type and outcome, and batch sizes', async () => {
    const event = itemEvent('create', randomId('r'), { title: 'm' });
    await post([event]);
    await post([event]);
    await post([itemEvent('create', randomId('r'), { bad: 1 })]);
    const text = await deps.metrics.registry.metrics();
    expect(text).toMatch(
      /herald_events_ingested_total\{entity_type="item",event_type="create",outcome="accepted"\} \d+/,
    );
    expect(text).toMatch(
      /herald_events_ingested_total\{entity_type="item",event_type="create",outcome="duplicate"\} [1-9]/,
    );
    expect(text).toMatch(
      /herald_events_ingested_total\{entity_type="item",event_type="create",outcome="rejected"\} [1-9]/,
    );
    expect(text).toMatch(/herald_ingest_batch_size_events_bucket\{le="1"\} [1-9]/);
  });

  it('counts a rejected event whose types are not strings as invalid, whatever their keys', async () => {
    const event = itemEvent('create', randomId('r'), {});
    // JSON.parse makes "__proto__" an own key; a literal object could not hold one.
    const hostile = '{"toString":1,"valueOf":2,"constructor":"x","__proto__":{"toString":3}}';
    const raw = JSON.stringify({ data: [event] }).replace(
      '"event_type":"create"',
      `"event_type":${hostile}`,
    );
    expect((await post(undefined, { raw })).status).toBe(422);
    expect(await deps.metrics.registry.metrics()).toMatch(
      /herald_events_ingested_total\{entity_type="invalid",event_type="invalid",outcome="rejected"\} [1-9]/,
    );
  });
});

describe('POST /events under contention', () => {
  it('a request Postgres rolls back to break a deadlock is done again: 202, not 500', async () => {
    // b sorts before a and comes first: the request writes b before a, whichever order it uses.
    const prefix = randomId('locked');
    const [a, b] = [`${prefix}-1`, `${prefix}-0`];
    const created = await post([
      itemEvent('create', a, { title: 'a' }, { model: 'page' }),
      itemEvent('create', b, { title: 'b' }, { model: 'page' }),
    ]);
    expect(created.status).toBe(202);
    // Another writer holds a's row; the request writes b, then waits for a; the other writer then
    // waits for b. The request's deadlock check finds the circle (the other writer's runs much
    // later), so the request is the one rolled back.
    const other = t.connect({ applicationName: `${t.schema!}_other` });
    try {
      let answer: Promise<Answer> | undefined;
      await other.transaction(async (tx) => {
        // The other writer looks for the circle long after the request does (1 s, the default):
        // on a loaded machine the request's check can run late, and the victim would be this one.
        await tx.query(`SET LOCAL deadlock_timeout = '20s'`);
        await tx.query('SELECT 1 FROM records WHERE id = $1 FOR UPDATE', [a]);
        answer = post([
          itemEvent('update', b, { title: 'b2' }, { model: 'page' }),
          itemEvent('update', a, { title: 'a2' }, { model: 'page' }),
        ]);
        await expect
          .poll(async () => {
            const { rows } = await tx.query<{ n: string }>(
              `SELECT count(*) AS n FROM pg_stat_activity
               WHERE application_name = $1 AND wait_event_type = 'Lock'`,
              [t.schema],
            );
            return Number(rows[0]!.n);
          })
          .toBe(1);
        await tx.query('SELECT 1 FROM records WHERE id = $1 FOR UPDATE', [b]);
      });
      const { status } = await answer!;
      expect(status).toBe(202);
      const titles = await Promise.all(
        [a, b].map(async (id) => (await findRecord(t.db, 'main', id))?.currentAttributes),
      );
      expect(titles).toEqual([{ title: 'a2' }, { title: 'b2' }]);
    } finally {
      await other.close();
    }
  });
});
