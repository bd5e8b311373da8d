import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, buildClient, type Client } from '@datocms/cma-client-node';
import {
  EnvironmentResolver,
  createApiApp,
  createEventMatchQueue,
  type EventMatchQueue,
} from '@herald/runtime';
import { ingestRouter } from '@herald/ingest';
import { readRouter } from '@herald/read';
import {
  createTestDb,
  createTestToken,
  fieldEntity,
  itemEvent as itemEventOf,
  modelEvent,
  randomId,
  serve,
  testDeps,
  testRedis,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import type { Redis } from '@herald/runtime';

/**
 * Compatibility with the official client (@datocms/cma-client-node) against ingest + read on
 * one port, the data written through POST /events as a producer would.
 */

let t: TestDb;
let redis: Redis;
let queue: EventMatchQueue;
let server: TestServer;
let client: Client;
let producerToken: string;

const BULK = 1_050;

const field = (apiKey: string, fieldType: string, localized = false) =>
  fieldEntity(apiKey, fieldType, { localized });

/** An item event of `model`, created and updated at `createdAt`. */
const itemEvent = (
  eventType: string,
  id: string,
  model: string,
  attributes: Record<string, unknown>,
  createdAt: string,
) =>
  itemEventOf(eventType, id, attributes, {
    model,
    meta: { created_at: createdAt, updated_at: createdAt },
  });

async function postEvents(data: unknown[]): Promise<void> {
  const res = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${producerToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ data }),
  });
  expect(res.status, await res.clone().text()).toBe(202);
  await res.arrayBuffer();
}

const iso = (seconds: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, seconds)).toISOString();

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  // One environment resolver for both routers, as in the single process: the environment event
  // below invalidates the cache the read routes use.
  const deps = { ...testDeps(t.db, redis), environments: new EnvironmentResolver(t.db) };
  queue = createEventMatchQueue(deps.coordination, deps.logger);
  server = await serve(
    createApiApp(deps, [
      readRouter(deps),
      ingestRouter({ ...deps, eventMatchQueue: queue, enqueueTimeoutMs: 5000 }),
    ]),
  );
  producerToken = await createTestToken(t.db, 'producer');
  client = buildClient({
    apiToken: await createTestToken(t.db, 'read_only'),
    baseUrl: server.url,
  });

  await postEvents([
    {
      type: 'event',
      id: randomId('env'),
      attributes: {
        entity_type: 'environment',
        event_type: 'update',
        environment: 'main',
        entity: { type: 'environment', id: 'main', attributes: { locales: ['en', 'it'] } },
      },
    },
    modelEvent('section', { modular_block: true }, [field('heading', 'string')]),
    modelEvent('article', { draft_mode_active: true }, [
      field('title', 'string', true),
      field('views', 'integer'),
      field('author', 'link'),
      field('sections', 'rich_text'),
    ]),
    modelEvent('bulk', { draft_mode_active: false }, [field('n', 'integer')]),
  ]);
  const section = (id: string, heading: string) => ({
    type: 'item',
    id,
    attributes: { heading },
    relationships: { item_type: { data: { type: 'item_type', id: 'section' } } },
  });
  /** Record a1's fields other than its sections (blocks). */
  const alpha = { title: { en: 'Alpha', it: 'Alfa' }, views: 3, author: 'a2' };
  await postEvents([
    itemEvent(
      'create',
      'a1',
      'article',
      { ...alpha, sections: [section('s1', 'Intro'), section('s2', 'Outro')] },
      iso(1),
    ),
    itemEvent('create', 'a2', 'article', { title: { en: 'Beta', it: 'Beta' }, views: 9 }, iso(2)),
    itemEvent('create', 'a3', 'article', { title: { en: 'Gamma', it: 'Gamma' }, views: 6 }, iso(3)),
  ]);
  await postEvents([
    itemEvent('publish', 'a1', 'article', { ...alpha, sections: ['s1', 's2'] }, iso(1)),
    itemEvent('publish', 'a2', 'article', { title: { en: 'Beta', it: 'Beta' }, views: 9 }, iso(2)),
  ]);
  for (let start = 0; start < BULK; start += 500) {
    const batch = [];
    for (let i = start; i < Math.min(BULK, start + 500); i++) {
      // Several records share a created_at: paging must still be stable (id tie-break).
      batch.push(itemEvent('create', `b${i}`, 'bulk', { n: i }, iso(100 + Math.floor(i / 7))));
    }
    await postEvents(batch);
  }
});

afterAll(async () => {
  await server?.close();
  await queue?.obliterate({ force: true });
  await queue?.close();
  redis?.disconnect();
  await t?.cleanup();
});

describe('official client: items.list', () => {
  it('lists published records by default, current on request', async () => {
    const published = await client.items.list({ filter: { type: 'article' } });
    expect(published.map((i) => i.id)).toEqual(['a1', 'a2']);
    const current = await client.items.list({ filter: { type: 'article' }, version: 'current' });
    expect(current.map((i) => i.id)).toEqual(['a1', 'a2', 'a3']);
    expect(current[0]!.item_type).toEqual({ type: 'item_type', id: 'article' });
    expect(current[0]!.meta.status).toBe('published');
    expect(current[2]!.meta.status).toBe('draft');
  });

  it('filters with operators (snake and camel case), orders, and uses the locale', async () => {
    const filtered = await client.items.list({
      filter: { type: 'article', fields: { views: { gt: 4 } } },
      order_by: 'views_DESC',
      version: 'current',
    });
    expect(filtered.map((i) => i.id)).toEqual(['a2', 'a3']);
    const camel = await client.items.list({
      filter: { type: 'article', fields: { id: { notIn: ['a1'] } } },
      version: 'current',
    });
    expect(camel.map((i) => i.id)).toEqual(['a2', 'a3']);
    const italian = await client.items.list({
      filter: { type: 'article', fields: { title: { eq: 'Alfa' } } },
      locale: 'it',
    });
    expect(italian.map((i) => i.id)).toEqual(['a1']);
    const matches = await client.items.list({
      filter: {
        type: 'article',
        fields: { title: { matches: { pattern: 'ALP', case_sensitive: false } } },
      },
    });
    expect(matches.map((i) => i.id)).toEqual(['a1']);
    const searched = await client.items.list({ filter: { query: 'outro' } });
    expect(searched.map((i) => i.id)).toEqual(['a1']);
    const byIds = await client.items.list({ filter: { ids: 'a2,s1' } });
    expect(byIds.map((i) => i.id).sort()).toEqual(['a2', 's1']);
  });

  it('nested: true expands blocks, never links', async () => {
    const [a1] = await client.items.list({ filter: { ids: 'a1' }, nested: true });
    const sections = a1!['sections'] as {
      id: string;
      heading?: string;
      attributes?: { heading: string };
    }[];
    expect(sections.map((s) => s.id)).toEqual(['s1', 's2']);
    expect(JSON.stringify(sections)).toContain('Intro');
    expect(a1!['author']).toBe('a2');
  });

  it('reports a rule violation as an ApiError with the code', async () => {
    const failure = await client.items
      .list({ filter: { type: 'article' }, page: { limit: 501 } })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).findError('INVALID_PARAMS')).toBeTruthy();
    const ordering = await client.items.list({ order_by: 'views_ASC' }).catch((e: unknown) => e);
    expect((ordering as ApiError).findError('INVALID_ORDERING')).toBeTruthy();
  });
});

describe('official client: items.listPagedIterator', () => {
  it('returns every one of 1,050 records exactly once (default page size)', async () => {
    const seen: string[] = [];
    for await (const item of client.items.listPagedIterator({ filter: { type: 'bulk' } })) {
      seen.push(item.id);
    }
    expect(seen).toHaveLength(BULK);
    expect(new Set(seen).size).toBe(BULK);
  });

  it('returns every record exactly once with big pages fetched concurrently', async () => {
    const seen = new Set<string>();
    let total = 0;
    for await (const item of client.items.listPagedIterator(
      { filter: { type: 'bulk' }, version: 'current' },
      { perPage: 500, concurrency: 3 },
    )) {
      seen.add(item.id);
      total++;
    }
    expect(total).toBe(BULK);
    expect(seen.size).toBe(BULK);
    for (let i = 0; i < BULK; i++) expect(seen.has(`b${i}`)).toBe(true);
  });
});

describe('official client: items.find', () => {
  it('finds a record, its current version, and answers 404 for none', async () => {
    const a1 = await client.items.find('a1');
    expect(a1.id).toBe('a1');
    expect(a1['views']).toBe(3);
    const a3 = await client.items.find('a3', { version: 'current' });
    expect(a3.meta.status).toBe('draft');
    const missing = await client.items.find('a3').catch((e: unknown) => e);
    expect((missing as ApiError).findError('NOT_FOUND')).toBeTruthy();
    const nested = await client.items.find('a1', { nested: true });
    expect(JSON.stringify(nested['sections'])).toContain('Outro');
  });
});
