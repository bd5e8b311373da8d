import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { EVENT_COUNT_EXACT_MAX, insertEvents } from '@herald/store';
import { createTestToken, testItemEvent, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// GET /events (docs/api.md, GET /events) over events stored as POST /events stores them.
const it = appTest(createApp);

interface Listed {
  data: { type: string; id: string; attributes: Record<string, unknown> }[];
  meta: { total_count: number; total_count_exact: boolean };
}

const at = (day: number) => new Date(Date.UTC(2026, 0, day));

/** Event ids newest first, as the default order gives them. */
const ALL = ['up-2', 'tie-2', 'tie-1', 'a-unpublish', 'up-1', 'b-publish', 'a-publish', 'a-update'];

it.beforeAll(async ({ api, db }) => {
  await insertEvents(db, [
    testItemEvent('a-update', { entityId: 'rec-a', eventType: 'update', occurredAt: at(1) }),
    testItemEvent('a-publish', { entityId: 'rec-a', eventType: 'publish', occurredAt: at(2) }),
    testItemEvent('b-publish', {
      environment: 'sandbox',
      isEnvironmentPrimary: false,
      entityId: 'rec-b',
      eventType: 'publish',
      occurredAt: at(3),
    }),
    testItemEvent('up-1', {
      entityType: 'upload',
      eventType: 'create',
      entityId: 'up-1',
      itemTypeId: null,
      itemTypeApiKey: null,
      entity: { type: 'upload', id: 'up-1' },
      occurredAt: at(4),
    }),
    testItemEvent('a-unpublish', { entityId: 'rec-a', eventType: 'unpublish', occurredAt: at(5) }),
  ]);
  // Two events that occurred at the same instant: acceptance order breaks the tie.
  await insertEvents(db, [testItemEvent('tie-1', { entityId: 'rec-c', occurredAt: at(6) })]);
  await insertEvents(db, [testItemEvent('tie-2', { entityId: 'rec-c', occurredAt: at(6) })]);
  // One through the API, as a producer sends it.
  const producer = api.as(await createTestToken(db, 'producer'));
  const posted = await producer.call('POST', '/events', {
    data: {
      type: 'event',
      id: 'up-2',
      attributes: {
        entity_type: 'upload',
        event_type: 'update',
        occurred_at: at(7).toISOString(),
        entity: { type: 'upload', id: 'up-2', attributes: { filename: 'a.png' } },
      },
    },
  });
  expect(posted.status).toBe(202);
  // Accepted on known days, for the accepted_at filter.
  await db.query(
    `UPDATE events SET accepted_at = occurred_at + interval '1 hour' WHERE id <> 'up-2'`,
  );
});

async function list(api: TestApi, query = ''): Promise<Listed> {
  const response = await api.call<Listed>('GET', `/events${query ? `?${query}` : ''}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

const ids = (listed: Listed) => listed.data.map((event) => event.id);

describe('GET /events', () => {
  it('lists every event newest first, without the entity bodies', async ({ api }) => {
    const listed = await list(api);
    expect(ids(listed)).toEqual(ALL);
    expect(listed.meta).toEqual({ total_count: ALL.length, total_count_exact: true });
    const publish = listed.data.find((event) => event.id === 'a-publish')!;
    expect(publish).toEqual({
      type: 'event',
      id: 'a-publish',
      attributes: {
        environment: 'main',
        entity_type: 'item',
        event_type: 'publish',
        entity_id: 'rec-a',
        item_type_id: 'post',
        item_type_api_key: 'post',
        occurred_at: at(2).toISOString(),
        accepted_at: new Date(at(2).getTime() + 3_600_000).toISOString(),
        matched_at: null,
      },
    });
    const posted = listed.data.find((event) => event.id === 'up-2')!;
    expect(posted.attributes).toMatchObject({
      environment: 'main',
      entity_type: 'upload',
      event_type: 'update',
      entity_id: 'up-2',
      item_type_id: null,
      occurred_at: at(7).toISOString(),
    });
  });

  it('orders oldest first when asked, ties in acceptance order either way', async ({ api }) => {
    expect(ids(await list(api, 'order_by=occurred_at_asc'))).toEqual([...ALL].reverse());
    expect(ids(await list(api, 'order_by=occurred_at_desc'))).toEqual(ALL);
    // Page by page across the tie: each event once, in the same order.
    for (const [order, expected] of [
      ['occurred_at_desc', ['tie-2', 'tie-1']],
      ['occurred_at_asc', ['tie-1', 'tie-2']],
    ] as const) {
      const pages = [];
      for (const offset of [0, 1]) {
        const query = `filter[entity_id]=rec-c&order_by=${order}&page[limit]=1&page[offset]=${offset}`;
        pages.push(...ids(await list(api, query)));
      }
      expect(pages, order).toEqual(expected);
    }
  });

  it('filters by each attribute, and by several at once', async ({ api }) => {
    const cases: [string, string[]][] = [
      ['filter[entity_id]=rec-a', ['a-unpublish', 'a-publish', 'a-update']],
      [
        'filter[entity_id]=rec-a&order_by=occurred_at_asc',
        ['a-update', 'a-publish', 'a-unpublish'],
      ],
      ['filter[entity_id]=nobody', []],
      ['filter[entity_type]=upload', ['up-2', 'up-1']],
      ['filter[event_type]=publish', ['b-publish', 'a-publish']],
      ['filter[environment]=sandbox', ['b-publish']],
      [
        'filter[environment]=main&filter[entity_type]=item&filter[event_type]=publish',
        ['a-publish'],
      ],
      ['filter[entity_id]=rec-a&filter[event_type]=publish', ['a-publish']],
      // Exclusive bounds, dates and date-times as GET /webhook_calls reads them.
      ['filter[occurred_at][gt]=2026-01-04', ['up-2', 'tie-2', 'tie-1', 'a-unpublish']],
      ['filter[occurred_at][lt]=2026-01-02T00:00:00Z', ['a-update']],
      [
        'filter[occurred_at][gt]=2026-01-01&filter[occurred_at][lt]=2026-01-04',
        ['b-publish', 'a-publish'],
      ],
      [
        'filter[entity_id]=rec-a&filter[occurred_at][gt]=2026-01-01T12:00%2B02:00',
        ['a-unpublish', 'a-publish'],
      ],
      [
        'filter[accepted_at][gt]=2026-01-05T00:30:00Z&filter[accepted_at][lt]=2026-01-06T02:00:00Z',
        ['tie-2', 'tie-1', 'a-unpublish'],
      ],
    ];
    for (const [query, expected] of cases) {
      const listed = await list(api, query);
      expect(ids(listed), query).toEqual(expected);
      expect(listed.meta, query).toEqual({ total_count: expected.length, total_count_exact: true });
    }
  });

  it("lists Herald's notices about a webhook by entity type notice and its id", async ({
    api,
    db,
  }) => {
    // As the delivery processes store them (docs/api.md, Notices): entity_id is the webhook's.
    await db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity)
       VALUES ('notice-1', 'main', true, 'notice', 'failing', '42', $1, '{}'),
         ('notice-2', 'main', true, 'notice', 'circuit_opened', '42', $2, '{}'),
         ('notice-3', 'main', true, 'notice', 'failing', '43', $2, '{}')`,
      [at(20), at(21)],
    );
    try {
      const about42 = await list(api, 'filter[entity_type]=notice&filter[entity_id]=42');
      expect(ids(about42)).toEqual(['notice-2', 'notice-1']);
      expect(about42.data[0]!.attributes).toMatchObject({
        entity_type: 'notice',
        event_type: 'circuit_opened',
        entity_id: '42',
      });
      const failing = await list(api, 'filter[entity_type]=notice&filter[event_type]=failing');
      expect(ids(failing)).toEqual(['notice-3', 'notice-1']);
      const wrong = await api.call(
        'GET',
        '/events?filter[entity_type]=notice&filter[event_type]=publish',
      );
      expect(wrong.status).toBe(422);
      expect(wrong.body.data[0].attributes.details.param).toBe('filter.event_type');
    } finally {
      await db.query(`DELETE FROM events WHERE entity_type = 'notice'`);
    }
  });

  it('pages by offset: the pages together are the list, the count on each', async ({ api }) => {
    const pages: string[] = [];
    for (let offset = 0; offset < ALL.length + 3; offset += 3) {
      const listed = await list(api, `page[limit]=3&page[offset]=${offset}`);
      expect(listed.meta.total_count).toBe(ALL.length);
      expect(listed.data.length).toBeLessThanOrEqual(3);
      pages.push(...ids(listed));
    }
    expect(pages).toEqual(ALL);
    expect(ids(await list(api, 'page[offset]=1000'))).toEqual([]);
    expect((await list(api, 'page[limit]=500')).data).toHaveLength(ALL.length);
  });

  it('counts exactly up to the cap; past it, an upper bound that says so', async ({ api, db }) => {
    // A cap's worth of events in an environment of their own, and one more of another type.
    await db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity)
       SELECT 'bulk-' || g, 'bulk', false, 'upload',
         CASE WHEN g = 0 THEN 'delete' ELSE 'create' END, 'up-bulk', $1, '{}'
       FROM generate_series(0, $2::int) g`,
      [at(10), EVENT_COUNT_EXACT_MAX],
    );
    try {
      const cap = await list(api, 'filter[environment]=bulk&filter[event_type]=create');
      expect(cap.meta).toEqual({ total_count: EVENT_COUNT_EXACT_MAX, total_count_exact: true });
      const over = await list(api, 'filter[environment]=bulk&page[limit]=1');
      expect(over.meta.total_count_exact).toBe(false);
      // Never fewer than match: a client paging up to the count misses none.
      expect(over.meta.total_count).toBeGreaterThanOrEqual(EVENT_COUNT_EXACT_MAX + 1);
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
      expect(over.meta.total_count).toBeGreaterThanOrEqual(rows[0]!.n);
      // Still exact for a narrower question.
      const few = await list(api, 'filter[environment]=bulk&filter[event_type]=delete');
      expect(few.meta).toEqual({ total_count: 1, total_count_exact: true });
    } finally {
      await db.query(`DELETE FROM events WHERE environment = 'bulk'`);
    }
  });

  it('refuses bad parameters with 422 INVALID_PARAMS naming them', async ({ api }) => {
    const cases: [string, string][] = [
      ['page[limit]=501', 'page.limit'],
      ['page[limit]=0', 'page.limit'],
      ['page[offset]=-1', 'page.offset'],
      ['page[offset]=1e3', 'page.offset'],
      ['order_by=created_at_asc', 'order_by'],
      ['filter[entity_type]=record', 'filter.entity_type'],
      ['filter[event_type]=published', 'filter.event_type'],
      ['filter[entity_type]=upload&filter[event_type]=publish', 'filter.event_type'],
      ['filter[entity_id]=', 'filter.entity_id'],
      [`filter[entity_id]=${'x'.repeat(129)}`, 'filter.entity_id'],
      ['filter[entity_id][]=rec-a', 'filter.entity_id'],
      ['filter[environment]=not%20an%20id', 'filter.environment'],
      ['filter[occurred_at][gt]=yesterday', 'filter.occurred_at.gt'],
      ['filter[occurred_at][lt]=2026-02-30', 'filter.occurred_at.lt'],
      ['filter[accepted_at][gt]=0000-12-31T23:00:00Z', 'filter.accepted_at.gt'],
      ['filter[occurred_at]=2026-01-01', 'filter.occurred_at'],
      ['filter[occurred_at][eq]=2026-01-01', 'filter.occurred_at'],
      ['filter[fields][entity_id][eq]=rec-a', 'filter'],
      ['sort=occurred_at', ''],
    ];
    for (const [query, param] of cases) {
      const response = await api.call('GET', `/events?${query}`);
      expect(response.status, query).toBe(422);
      const [error] = response.body.data as { attributes: Record<string, any> }[];
      expect(error!.attributes['code'], query).toBe('INVALID_PARAMS');
      expect(error!.attributes['details']['param'], query).toBe(param);
    }
  });

  it('is for admins only', async ({ api, db }) => {
    for (const role of ['read_only', 'producer'] as const) {
      const response = await api.as(await createTestToken(db, role)).call('GET', '/events');
      expect(response.status, role).toBe(403);
      expect(JSON.stringify(response.body)).toContain('INSUFFICIENT_PERMISSIONS');
    }
  });
});

const PARAMS = [
  'page[offset]',
  'page[limit]',
  'order_by',
  'filter[entity_id]',
  'filter[entity_type]',
  'filter[event_type]',
  'filter[environment]',
  'filter[occurred_at][gt]',
  'filter[occurred_at][lt]',
  'filter[accepted_at][gt]',
  'filter[accepted_at][lt]',
  'filter[occurred_at]',
  'filter',
  'page',
];
const value = fc.oneof(
  fc.constantFrom('rec-a', 'item', 'upload', 'publish', 'main', '0', '500', '501', '-1', ''),
  fc.constantFrom('2026-01-02', '2026-01-02T00:00:00+02:00', '99999-01-01', 'occurred_at_asc'),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
);
/** encodeURIComponent, which throws on a lone surrogate: that one goes raw. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replaceAll(/[#&]/g, '');
  }
}
/** A query string of known and unknown names, values encoded or left raw. */
const queryString = fc.oneof(
  fc
    .array(
      fc.tuple(
        fc.oneof(fc.constantFrom(...PARAMS), fc.string({ maxLength: 12 })),
        value,
        fc.boolean(),
      ),
      { maxLength: 6 },
    )
    .map((pairs) =>
      pairs
        .map(([name, v, raw]) => `${name}=${raw ? v.replaceAll(/[#&]/g, '') : encode(v)}`)
        .join('&'),
    ),
  fc.string({ unit: 'binary', maxLength: 60 }).map((text) => text.replaceAll('#', '')),
);

// Hundreds of real HTTP requests: give them room on a busy machine.
describe('arbitrary query strings', { timeout: 120_000 }, () => {
  it('GET /events answers 200 or a 4xx in the error envelope, never a 5xx', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(queryString, async (query) => {
        const response = await api.fetch(`/events?${query}`);
        const body = (await response.json()) as { data: unknown };
        expect([200, 400, 422], `${query}: ${JSON.stringify(body).slice(0, 300)}`).toContain(
          response.status,
        );
        if (response.status !== 200) {
          for (const error of body.data as { type: string; attributes: { code: string } }[]) {
            expect(error.type).toBe('api_error');
            expect(error.attributes.code).toMatch(/^[A-Z_]+$/);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
