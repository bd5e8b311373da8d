import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { ITEM_FILTER_OPERATORS } from '@herald/contract';
import { defineModel, putRecord } from '@herald/testkit';
import { upsertEnvironment } from '@herald/store';
import { readTest } from '../../test/fixtures.js';

/** Any query string gets a 200 or a 4xx in the error envelope, never a 500. */
const it = readTest({ expressionIndexes: false });

const FIELDS = ['title', 'views', 'rating', 'day', 'at', 'flag', 'body', 'refs', 'place', 'nope'];

it.beforeAll(async ({ db }) => {
  await upsertEnvironment(db, 'main', ['en', 'it']);
  await defineModel(db, 'main', {
    id: 'm1',
    apiKey: 'post',
    sortable: true,
    fields: [
      { apiKey: 'title', fieldType: 'string', localized: true },
      { apiKey: 'views', fieldType: 'integer' },
      { apiKey: 'rating', fieldType: 'float' },
      { apiKey: 'day', fieldType: 'date' },
      { apiKey: 'at', fieldType: 'date_time' },
      { apiKey: 'flag', fieldType: 'boolean' },
      { apiKey: 'body', fieldType: 'structured_text' },
      { apiKey: 'refs', fieldType: 'links' },
      { apiKey: 'place', fieldType: 'lat_lon' },
    ],
  });
  for (let i = 0; i < 5; i++) {
    await putRecord(db, 'main', ['en', 'it'], {
      id: `r${i}`,
      itemTypeId: 'm1',
      mode: i % 2 ? 'publish' : 'save',
      createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
      position: i,
      attributes: {
        title: { en: `Title ${i}`, it: null },
        views: i * 10,
        rating: i / 3,
        day: `2024-01-0${i + 1}`,
        at: `2024-01-0${i + 1}T10:00:00Z`,
        flag: i % 2 === 0,
        refs: [`r${(i + 1) % 5}`],
        place: { latitude: 45, longitude: 9 + i },
      },
    });
  }
});

// Every operator, some in the camelCase the API also takes, and one it does not know.
const OPERATORS = [...ITEM_FILTER_OPERATORS, 'notIn', 'anyIn', 'isPresent', 'bogus'];

const value = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom(
    'true',
    'false',
    '1',
    '-1',
    '0',
    '1e309',
    '2024-01-02',
    '2024-01-02T10:00:00',
    '2024-02-30',
    'null',
    '(',
    '[a-',
    '\\',
    '%',
    '%00',
    '%zz',
    ',',
    'r1,r2',
    '99999999999999999999',
    '9999-12-31T23:59:59-14:00',
    '0001-01-01T00:00:00%2B14:00',
    '0050-01-01T00:00:00Z',
    '2147483648',
    '-9007199254740992',
    ',,,',
    '%20',
    'title_ASC,,views_DESC',
    '(a{1,200}){1,200}b',
    '(a)%5C1',
    '%5Cm',
  ),
  fc.integer().map(String),
  fc.double().map(String),
  fc.string({ unit: 'binary', maxLength: 12 }).map(encodeURIComponent),
);

const key = fc.oneof(
  fc.constantFrom(
    'nested',
    'version',
    'locale',
    'order_by',
    'page[limit]',
    'page[offset]',
    'filter[ids]',
    'filter[type]',
    'filter[query]',
    'filter[only_valid]',
    'filter',
    'page',
    'filter[fields]',
  ),
  fc
    .tuple(
      fc.constantFrom(...FIELDS, 'id', '_status', '_created_at', 'position', 'parent_id'),
      fc.constantFrom(...OPERATORS),
      fc.constantFrom(
        '',
        '[]',
        '[pattern]',
        '[regexp]',
        '[case_sensitive]',
        '[latitude]',
        '[radius]',
        '[0]',
        '[x][y]',
      ),
    )
    .map(([f, op, tail]) => `filter[fields][${f}][${op}]${tail}`),
  fc.string({ maxLength: 15 }),
);

const pair = fc.tuple(key, value).map(([k, v]) => `${k}=${v}`);
const structured = fc.array(pair, { maxLength: 8 }).map((pairs) => {
  const withType = pairs.some((p) => p.startsWith('filter[fields]'))
    ? ['filter[type]=post', ...pairs]
    : pairs;
  return withType.join('&');
});
const anyString = fc
  .string({ unit: 'binary', maxLength: 200 })
  .map((s) => encodeURI(s).replace(/#/g, '%23'));

describe('GET /items property: never a 500', () => {
  it('answers every generated query string with 200 or a 4xx envelope', async ({ api }) => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(structured, anyString), async (query) => {
        const res = await api.fetch(`/items?${query}`);
        const body = (await res.json()) as { data?: unknown; meta?: unknown };
        expect(res.status, `${query} → ${JSON.stringify(body)}`).toBeLessThan(500);
        if (res.status === 200) {
          expect(Array.isArray(body.data)).toBe(true);
          expect(body.meta).toMatchObject({ total_count: expect.any(Number) });
        } else {
          expect(res.status).toBeGreaterThanOrEqual(400);
          const [entry] = body.data as { type: string; attributes: { code: string } }[];
          expect(entry!.type).toBe('api_error');
        }
      }),
      { numRuns: 400 },
    );
  });
});
