import { describe, expect } from 'vitest';
import fc from 'fast-check';
import { createTestToken, defineModel, putRecord, type SeedRecord } from '@herald/testkit';
import { deleteRecords, upsertEnvironment } from '@herald/store';
import { readTest } from '../../test/fixtures.js';

/** Raw bytes for a path segment; "." and ".." are dot segments that URLs resolve away. */
const idBytes = (maxLength: number) =>
  fc
    .uint8Array({ minLength: 1, maxLength })
    .filter((bytes) => !/^\.{1,2}$/.test(Buffer.from(bytes).toString('latin1')));

interface ApiErrorBody {
  data: { attributes: { code: string; details: Record<string, unknown> } }[];
}
interface ListBody {
  data: { id: string; attributes: Record<string, unknown>; meta: Record<string, unknown> }[];
  meta: { total_count: number };
}

/** The read app on the records below, and the requests the tests make of it. */
const it = readTest({ expressionIndexes: true })
  .extend(
    'get',
    ({ api }) =>
      (query: string, token = api.token) =>
        api.as(token).call('GET', `/items${query}`),
  )
  .extend('list', ({ get }) => async (query: string): Promise<ListBody> => {
    const { status, body } = await get(query);
    expect(status, JSON.stringify(body)).toBe(200);
    return body as ListBody;
  })
  .extend(
    'ids',
    ({ list }) =>
      async (query: string): Promise<string[]> =>
        (await list(query)).data.map((item) => item.id),
  )
  .extend('error', ({ get }) => async (query: string, code: string) => {
    const { status, body } = await get(query);
    expect(status, JSON.stringify(body)).toBe(422);
    const entry = (body as ApiErrorBody).data[0]!.attributes;
    expect(entry.code).toBe(code);
    return entry.details;
  })
  .extend(
    'one',
    ({ get }) =>
      (path: string) =>
        get(`/${path}`),
  );

const ENV = 'main';
const LOCALES = ['en', 'it'];
const at = (n: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, n));

const dast = (text: string) => ({
  schema: 'dast',
  document: {
    type: 'root',
    children: [{ type: 'paragraph', children: [{ type: 'span', value: text }] }],
  },
});

it.beforeAll(async ({ db }) => {
  /** Record `id` of model `itemTypeId`, written as `mode`, created at second `second`. */
  const put = (
    itemTypeId: string,
    id: string,
    mode: SeedRecord['mode'],
    second: number,
    rest: Omit<SeedRecord, 'id' | 'itemTypeId' | 'mode' | 'createdAt'>,
  ) => putRecord(db, ENV, LOCALES, { id, itemTypeId, mode, createdAt: at(second), ...rest });
  await upsertEnvironment(db, ENV, LOCALES);
  await defineModel(db, ENV, {
    id: 'b_text',
    apiKey: 'text_block',
    modularBlock: true,
    fields: [
      { apiKey: 'text', fieldType: 'text' },
      { apiKey: 'inner', fieldType: 'rich_text' },
    ],
  });
  await defineModel(db, ENV, {
    id: 'm_post',
    apiKey: 'post',
    fields: [
      { apiKey: 'title', fieldType: 'string', localized: true },
      { apiKey: 'slug', fieldType: 'slug' },
      { apiKey: 'body', fieldType: 'text' },
      { apiKey: 'views', fieldType: 'integer' },
      { apiKey: 'rating', fieldType: 'float' },
      { apiKey: 'published_on', fieldType: 'date' },
      { apiKey: 'starts_at', fieldType: 'date_time' },
      { apiKey: 'featured', fieldType: 'boolean' },
      { apiKey: 'data', fieldType: 'json' },
      { apiKey: 'author', fieldType: 'link' },
      { apiKey: 'related', fieldType: 'links' },
      { apiKey: 'cover', fieldType: 'file' },
      { apiKey: 'photos', fieldType: 'gallery' },
      { apiKey: 'place', fieldType: 'lat_lon' },
      { apiKey: 'color', fieldType: 'color' },
      { apiKey: 'content', fieldType: 'structured_text' },
      { apiKey: 'sections', fieldType: 'rich_text' },
      { apiKey: 'hero', fieldType: 'single_block' },
    ],
  });
  await defineModel(db, ENV, {
    id: 'm_page',
    apiKey: 'page',
    sortable: true,
    fields: [{ apiKey: 'title', fieldType: 'string' }],
  });
  await defineModel(db, ENV, {
    id: 'm_cat',
    apiKey: 'category',
    tree: true,
    fields: [{ apiKey: 'name', fieldType: 'string' }],
  });

  const file = (id: string) => ({
    upload_id: id,
    alt: null,
    title: null,
    custom_data: {},
    focal_point: null,
  });
  await put('m_post', 'p1', 'publish', 1, {
    attributes: {
      title: { en: 'Hello world', it: 'Ciao mondo' },
      slug: 'hello-world',
      body: 'The quick brown fox',
      views: 10,
      rating: 4.5,
      published_on: '2024-01-10',
      starts_at: '2024-01-10T10:00:00Z',
      featured: true,
      data: '{"a":1}',
      author: 'p2',
      related: ['p2', 'p3'],
      cover: file('u1'),
      photos: [file('u1'), file('u2')],
      place: { latitude: 45.4642, longitude: 9.19 },
      color: { red: 1, green: 2, blue: 3, alpha: 255 },
      content: dast('Structured banana'),
      sections: ['blk1'],
      hero: null,
    },
    blocks: [
      {
        id: 'blk1',
        itemTypeId: 'b_text',
        parentId: 'p1',
        attributes: { text: 'Zebra crossing', inner: ['blk2'] },
      },
      {
        id: 'blk2',
        itemTypeId: 'b_text',
        parentId: 'blk1',
        attributes: { text: 'Xylophone', inner: [] },
      },
    ],
  });
  await put('m_post', 'p2', 'publish', 2, {
    attributes: {
      title: { en: 'Second post', it: 'Secondo' },
      slug: 'second',
      body: null,
      views: 20,
      rating: 3,
      published_on: '2024-02-10',
      starts_at: '2024-02-10T10:00:00+02:00',
      featured: false,
      author: null,
      related: ['p3'],
      cover: null,
      photos: [file('u3')],
      place: { latitude: 41.9028, longitude: 12.4964 },
      color: null,
      content: null,
      sections: [],
    },
  });
  await put('m_post', 'p3', 'save', 3, {
    attributes: { title: { en: 'Third draft', it: null }, slug: 'third', body: '', views: null },
  });
  await put('m_post', 'p4', 'publish', 4, {
    attributes: { title: { en: 'Old title' }, slug: 'four', views: 7 },
  });
  await put('m_post', 'p4', 'save', 4, {
    updatedAt: at(100),
    attributes: { title: { en: 'New title' }, slug: 'four', views: 8 },
  });
  await put('m_post', 'p5', 'publish', 5, {
    isValid: false,
    attributes: { title: { en: '[special] 100% _under_' }, slug: 'five', views: 5 },
  });
  // 35 pages, created in order, positioned in reverse: the default order is position_ASC.
  for (let i = 0; i < 35; i++) {
    await put('m_page', `pg${String(i).padStart(2, '0')}`, 'publish', 10 + i, {
      position: 35 - i,
      attributes: { title: `Page ${i % 3}` },
    });
  }
  await put('m_cat', 'c1', 'publish', 50, {
    position: 1,
    attributes: { name: 'Root' },
  });
  await put('m_cat', 'c2', 'publish', 51, {
    position: 1,
    parentId: 'c1',
    attributes: { name: 'Child' },
  });
});

const POST = 'filter[type]=post';
const f = (field: string, rest: string) => `?${POST}&filter[fields][${field}]${rest}`;

describe('GET /items: roles', () => {
  it('lets read_only in and keeps producer out', async ({ db, get }) => {
    expect((await get('')).status).toBe(200);
    const { status, body } = await get('', await createTestToken(db, 'producer'));
    expect(status).toBe(403);
    expect((body as ApiErrorBody).data[0]!.attributes.code).toBe('INSUFFICIENT_PERMISSIONS');
  });
});

describe('GET /items: version, type, ids, paging', () => {
  it('lists published records of every model by _created_at, blocks never', async ({ list }) => {
    const body = await list('?page[limit]=100');
    const got = body.data.map((i) => i.id);
    expect(got.slice(0, 4)).toEqual(['p1', 'p2', 'p4', 'p5']);
    expect(got).not.toContain('p3');
    expect(got).not.toContain('blk1');
    expect(body.meta.total_count).toBe(4 + 35 + 2);
    expect(body.data.find((i) => i.id === 'p4')!.attributes['title']).toEqual({ en: 'Old title' });
  });

  it('version=current lists the latest version of every record', async ({ list }) => {
    const body = await list(`?${POST}&version=current`);
    expect(body.data.map((i) => i.id)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    expect(body.meta.total_count).toBe(5);
    expect(body.data.find((i) => i.id === 'p4')!.attributes['title']).toEqual({ en: 'New title' });
    expect(body.data.find((i) => i.id === 'p4')!.meta['status']).toBe('updated');
  });

  it('filter[type] takes api_keys and ids, mixed; unknown → INVALID_FILTER', async ({
    list,
    error,
  }) => {
    expect((await list('?filter[type]=post,m_cat&page[limit]=100')).meta.total_count).toBe(6);
    const details = await error('?filter[type]=post,nope', 'INVALID_FILTER');
    expect(details['unknown']).toEqual(['nope']);
    expect(details['param']).toBe('filter[type]');
  });

  it('filter[ids] returns records and blocks; with filter[type] → INVALID_FILTER', async ({
    ids,
    error,
  }) => {
    expect((await ids('?filter[ids]=p2,blk1,p1')).sort()).toEqual(['blk1', 'p1', 'p2']);
    expect(await ids('?filter[ids]=p3')).toEqual([]);
    expect(await ids('?filter[ids]=p3&version=current')).toEqual(['p3']);
    await error('?filter[ids]=p1&filter[type]=post', 'INVALID_FILTER');
  });

  it('pages default to 30, total_count is exact, offsets page stably', async ({ list }) => {
    const first = await list('?filter[type]=page');
    expect(first.data).toHaveLength(30);
    expect(first.meta.total_count).toBe(35);
    // position_ASC by default for a sortable model: pg34 has position 1.
    expect(first.data[0]!.id).toBe('pg34');
    const rest = await list('?filter[type]=page&page[offset]=30&page[limit]=30');
    expect(rest.data).toHaveLength(5);
    expect(rest.meta.total_count).toBe(35);
    const all = [...first.data, ...rest.data].map((i) => i.id);
    expect(new Set(all).size).toBe(35);
  });

  it('page[limit] above 500, below 1 or not an integer → INVALID_PARAMS, never capped', async ({
    list,
    error,
  }) => {
    expect((await list('?page[limit]=500')).data.length).toBeLessThanOrEqual(500);
    for (const bad of ['501', '0', '-1', 'abc', '1.5', '']) {
      const details = await error(`?page[limit]=${bad}`, 'INVALID_PARAMS');
      expect(details['param']).toBe('page[limit]');
    }
    await error('?page[offset]=-1', 'INVALID_PARAMS');
    await error('?page[offset]=99999999999999999999', 'INVALID_PARAMS');
    await error('?page[size]=2', 'INVALID_PARAMS');
    await error('?page[limit][]=2', 'INVALID_PARAMS');
  });

  it('a huge page[offset] is an empty page with the exact count', async ({ list }) => {
    const body = await list('?page[offset]=9007199254740991');
    expect(body.data).toEqual([]);
    expect(body.meta.total_count).toBe(41);
  });

  it('version and nested must be known values', async ({ error }) => {
    await error('?version=draft', 'INVALID_PARAMS');
    await error('?nested=yes', 'INVALID_PARAMS');
    await error('?filter[only_valid]=maybe', 'INVALID_FILTER');
    await error('?filter[bogus]=1', 'INVALID_FILTER');
  });
});

describe('GET /items: order_by', () => {
  it('sorts by fields and meta columns, several rules, id last', async ({ ids }) => {
    expect(await ids(`?${POST}&order_by=views_DESC`)).toEqual(['p2', 'p1', 'p4', 'p5']);
    expect(await ids(`?${POST}&order_by=views_ASC&version=current`)).toEqual([
      'p5',
      'p4',
      'p1',
      'p2',
      'p3',
    ]);
    expect(await ids(`?${POST}&order_by=_created_at_DESC`)).toEqual(['p5', 'p4', 'p2', 'p1']);
    expect(await ids(`?${POST}&order_by=id_DESC`)).toEqual(['p5', 'p4', 'p2', 'p1']);
    expect(
      await ids('?filter[type]=page&order_by=title_DESC,_created_at_DESC&page[limit]=3'),
    ).toEqual(['pg32', 'pg29', 'pg26']);
    // Equal titles fall back to id ASC.
    expect(await ids('?filter[type]=page&order_by=title_ASC&page[limit]=3')).toEqual([
      'pg00',
      'pg03',
      'pg06',
    ]);
    expect(await ids(`?${POST}&order_by=title_ASC&locale=it`)).toEqual(['p1', 'p2', 'p4', 'p5']);
    expect(await ids(`?${POST}&order_by=starts_at_DESC,id_ASC`)).toEqual(['p4', 'p5', 'p2', 'p1']);
    expect(await ids(`?${POST}&order_by=_status_DESC,id_DESC`)).toEqual(['p4', 'p5', 'p2', 'p1']);
  });

  it('rejects what it cannot sort with INVALID_ORDERING', async ({ error }) => {
    await error('?order_by=id_ASC', 'INVALID_ORDERING');
    await error('?filter[type]=post,page&order_by=id_ASC', 'INVALID_ORDERING');
    const details = await error(`?${POST}&order_by=nope_ASC`, 'INVALID_ORDERING');
    expect(details['field']).toBe('nope');
    await error(`?${POST}&order_by=body_ASC`, 'INVALID_ORDERING');
    await error(`?${POST}&order_by=views`, 'INVALID_ORDERING');
    await error(`?${POST}&order_by=views_UP`, 'INVALID_ORDERING');
    await error(`?${POST}&order_by=position_ASC`, 'INVALID_ORDERING');
    await error(`?${POST}&order_by=_rank_DESC`, 'INVALID_ORDERING');
    await error(`?filter[query]=fox&order_by=title_ASC`, 'INVALID_ORDERING');
    // Only separators name no rule: not the default order in disguise.
    for (const empty of [',,,', '', '%20,%20']) {
      const details = await error(`?${POST}&order_by=${empty}`, 'INVALID_ORDERING');
      expect(details['param']).toBe('order_by');
    }
  });

  it('sorts sortable models by position', async ({ ids }) => {
    expect(await ids('?filter[type]=page&order_by=position_DESC&page[limit]=2')).toEqual([
      'pg00',
      'pg01',
    ]);
  });
});

describe('GET /items: filter[query]', () => {
  it('searches the record text in locale, blocks included (recursively), ranked', async ({
    list,
    ids,
  }) => {
    expect(await ids('?filter[query]=fox')).toEqual(['p1']);
    expect(await ids('?filter[query]=zebra')).toEqual(['p1']);
    expect(await ids('?filter[query]=xylophone')).toEqual(['p1']);
    expect(await ids('?filter[query]=banana')).toEqual(['p1']);
    expect(await ids('?filter[query]=mondo')).toEqual([]);
    expect(await ids('?filter[query]=mondo&locale=it')).toEqual(['p1']);
    expect(await ids('?filter[query]=fox&filter[type]=page')).toEqual([]);
    expect(await ids('?filter[query]=third')).toEqual([]);
    expect(await ids('?filter[query]=third&version=current')).toEqual(['p3']);
    const body = await list('?filter[query]=post OR second OR hello&order_by=_rank_DESC');
    expect(body.data.map((i) => i.id)).toEqual(['p2', 'p1']);
    expect(body.meta.total_count).toBe(2);
    expect(await ids('?filter[query]=post OR second OR hello&order_by=_rank_ASC')).toEqual([
      'p1',
      'p2',
    ]);
  });

  it('a blank query searches for nothing → INVALID_FILTER', async ({ error }) => {
    for (const blank of ['', '%20%20', '%09']) {
      const details = await error(`?filter[query]=${blank}`, 'INVALID_FILTER');
      expect(details['param']).toBe('filter[query]');
    }
  });

  it('a locale outside the environment → INVALID_LOCALE', async ({ error }) => {
    const details = await error('?filter[query]=x&locale=fr', 'INVALID_LOCALE');
    expect(details['param']).toBe('locale');
  });
});

describe('GET /items: filter[fields]', () => {
  it('needs exactly one model', async ({ error }) => {
    await error('?filter[fields][title][eq]=x', 'INVALID_FILTER_FIELDS_PARAM');
    await error(
      '?filter[type]=post,page&filter[fields][title][eq]=x',
      'INVALID_FILTER_FIELDS_PARAM',
    );
  });

  it('names the field and operator of an unknown field, operator or bad operand', async ({
    error,
  }) => {
    let d = await error(f('nope', '[eq]=1'), 'INVALID_FILTER_FIELDS_PARAM');
    expect(d['field']).toBe('nope');
    d = await error(f('views', '[bogus]=1'), 'INVALID_FILTER_FIELDS_PARAM');
    expect(d).toMatchObject({ field: 'views', operator: 'bogus' });
    d = await error(f('views', '[gt]=abc'), 'INVALID_FILTER_FIELDS_PARAM');
    expect(d).toMatchObject({ field: 'views', operator: 'gt', param: 'filter[fields][views][gt]' });
    await error(f('views', '[gt][x]=1'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('views', '=1'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('slug', '[matches][pattern]=x'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('body', '[eq]=x'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('sections', '[exists]=true'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('hero', '[eq]=x'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('data', '[eq]=x'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('published_on', '[gt]=2024-13-01'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('starts_at', '[gt]=yesterday'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('featured', '[eq]=yes'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('_status', '[eq]=gone'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('position', '[eq]=1'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('parent_id', '[eq]=1'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('exists', '[exists]=maybe'), 'INVALID_FILTER_FIELDS_PARAM');
    await error(f('place', '[near][latitude]=x'), 'INVALID_FILTER_FIELDS_PARAM');
  });

  it('string: eq, neq, in, not_in (nulls match the negations), locale', async ({ ids }) => {
    expect(await ids(f('title', '[eq]=Hello world'))).toEqual(['p1']);
    expect(await ids(f('title', '[eq]=Ciao mondo'))).toEqual([]);
    expect(await ids(f('title', '[eq]=Ciao mondo') + '&locale=it')).toEqual(['p1']);
    expect(await ids(f('title', '[neq]=Hello world'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('title', '[neq]=Secondo') + '&locale=it')).toEqual(['p1', 'p4', 'p5']);
    expect(
      await ids(f('title', '[in][]=Hello world&filter[fields][title][in][]=Old title')),
    ).toEqual(['p1', 'p4']);
    expect(await ids(f('title', '[in]=Hello world,Old title'))).toEqual(['p1', 'p4']);
    expect(await ids(f('title', '[not_in][]=Hello world'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('title', '[notIn][]=Hello world'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('title', '[in]='))).toEqual([]);
    expect(await ids(f('title', '[not_in]='))).toEqual(['p1', 'p2', 'p4', 'p5']);
  });

  it('string: matches (regexp, case, literal), not_matches, is_blank, is_present, exists', async ({
    ids,
  }) => {
    expect(await ids(f('title', '[matches][pattern]=^hel'))).toEqual(['p1']);
    expect(
      await ids(
        f('title', '[matches][pattern]=^hel&filter[fields][title][matches][case_sensitive]=true'),
      ),
    ).toEqual([]);
    expect(
      await ids(
        f('title', '[matches][pattern]=^Hel&filter[fields][title][matches][caseSensitive]=true'),
      ),
    ).toEqual(['p1']);
    expect(
      await ids(
        f(
          'title',
          '[matches][pattern]=%5Bspecial%5D%20100%25&filter[fields][title][matches][regexp]=false',
        ),
      ),
    ).toEqual(['p5']);
    expect(
      await ids(
        f('title', '[matches][pattern]=_UNDER_&filter[fields][title][matches][regexp]=false'),
      ),
    ).toEqual(['p5']);
    expect(await ids(f('title', '[not_matches][pattern]=o'))).toEqual(['p5']);
    expect(await ids(f('title', '[notMatches][pattern]=o') + '&locale=it')).toEqual(['p4', 'p5']);
    expect(await ids(f('title', '[is_blank]=true') + '&locale=it')).toEqual(['p4', 'p5']);
    expect(await ids(f('title', '[isPresent]=true') + '&locale=it')).toEqual(['p1', 'p2']);
    expect(await ids(f('title', '[exists]=false') + '&locale=it&version=current')).toEqual([
      'p3',
      'p4',
      'p5',
    ]);
  });

  it('an invalid regular expression → 422 naming the parameter, never 500', async ({ error }) => {
    for (const pattern of ['(', '[a-', 'a{2,1}', '\\', '(?<x>a)', '*']) {
      const d = await error(
        f('title', `[matches][pattern]=${encodeURIComponent(pattern)}`),
        'INVALID_FILTER_FIELDS_PARAM',
      );
      expect(String(d['message'])).toMatch(/regular expression/i);
      expect(d['param']).toBe('filter[fields][title][matches]');
    }
  });

  it('a regular expression whose cost cannot be bounded → 422 naming the parameter', async ({
    ids,
    error,
  }) => {
    const refused: [string, string, RegExp][] = [
      ['title', '[matches][pattern]=(a{1,200}){1,200}b', /repeated group/],
      ['title', '[matches]=(a%2B)%2B', /repeated group/],
      ['body', '[not_matches][pattern]=^(.*)%5C1$', /back-references/],
      ['content', '[matches][pattern]=' + '.*'.repeat(21), /quantifiers/],
      ['title', '[matches][pattern]=' + '.{1,100}'.repeat(11), /too large/],
    ];
    for (const [field, rest, why] of refused) {
      const d = await error(f(field, rest), 'INVALID_FILTER_FIELDS_PARAM');
      expect(d['param']).toBe(`filter[fields][${field}]${rest.slice(0, rest.indexOf(']') + 1)}`);
      expect(String(d['message'])).toMatch(why);
    }
    // The same text as a literal substring is fine, and so is a bounded pattern.
    expect(
      await ids(
        f('title', '[matches][pattern]=(a%2B)%2B&filter[fields][title][matches][regexp]=false'),
      ),
    ).toEqual([]);
    expect(await ids(f('title', '[matches][pattern]=^(he|wo)[a-z]{1,20}'))).toEqual(['p1']);
  });

  it('text and structured_text: matches, is_blank, is_present, exists', async ({ ids }) => {
    expect(await ids(f('body', '[matches][pattern]=QUICK'))).toEqual(['p1']);
    expect(await ids(f('body', '[is_blank]=true') + '&version=current')).toEqual([
      'p2',
      'p3',
      'p4',
      'p5',
    ]);
    expect(await ids(f('body', '[exists]=true') + '&version=current')).toEqual(['p1', 'p3']);
    expect(await ids(f('content', '[matches][pattern]=banana'))).toEqual(['p1']);
    expect(await ids(f('content', '[not_matches][pattern]=banana'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('content', '[is_present]=true'))).toEqual(['p1']);
    expect(await ids(f('content', '[exists]=true'))).toEqual(['p1']);
  });

  it('slug: eq, neq, in, not_in', async ({ ids }) => {
    expect(await ids(f('slug', '[eq]=second'))).toEqual(['p2']);
    expect(await ids(f('slug', '[neq]=second'))).toEqual(['p1', 'p4', 'p5']);
    expect(await ids(f('slug', '[in][]=four&filter[fields][slug][in][]=five'))).toEqual([
      'p4',
      'p5',
    ]);
    expect(await ids(f('slug', '[not_in][]=four'))).toEqual(['p1', 'p2', 'p5']);
  });

  it('integer and float: eq..lte, exists (coerced from strings)', async ({ ids }) => {
    expect(await ids(f('views', '[eq]=10'))).toEqual(['p1']);
    expect(await ids(f('views', '[neq]=10') + '&version=current')).toEqual([
      'p2',
      'p3',
      'p4',
      'p5',
    ]);
    expect(await ids(f('views', '[gt]=7'))).toEqual(['p1', 'p2']);
    expect(await ids(f('views', '[gte]=7'))).toEqual(['p1', 'p2', 'p4']);
    expect(await ids(f('views', '[lt]=10'))).toEqual(['p4', 'p5']);
    expect(await ids(f('views', '[lte]=10&filter[fields][views][gt]=5'))).toEqual(['p1', 'p4']);
    expect(await ids(f('views', '[exists]=false') + '&version=current')).toEqual(['p3']);
    expect(await ids(f('rating', '[gt]=3.5'))).toEqual(['p1']);
    expect(await ids(f('rating', '[lte]=3'))).toEqual(['p2']);
    expect(await ids(f('rating', '[gte]=-1e3'))).toEqual(['p1', 'p2']);
  });

  it('date and date_time: comparisons; a date-time without zone is UTC', async ({ ids }) => {
    expect(await ids(f('published_on', '[gte]=2024-02-01'))).toEqual(['p2']);
    expect(await ids(f('published_on', '[lt]=2024-02-01'))).toEqual(['p1']);
    expect(await ids(f('published_on', '[exists]=true'))).toEqual(['p1', 'p2']);
    // p2 starts at 2024-02-10T08:00:00Z.
    expect(await ids(f('starts_at', '[eq]=2024-02-10T08:00:00'))).toEqual(['p2']);
    expect(await ids(f('starts_at', '[eq]=2024-02-10T09:00:00%2B01:00'))).toEqual(['p2']);
    expect(await ids(f('starts_at', '[gt]=2024-02-10T08:00:00Z'))).toEqual([]);
    expect(await ids(f('starts_at', '[gte]=2024-02-10T07:59:59'))).toEqual(['p2']);
    expect(await ids(f('starts_at', '[lte]=2024-01-10T10:00:00'))).toEqual(['p1']);
    expect(await ids(f('starts_at', '[neq]=2024-01-10T10:00:00'))).toEqual(['p2', 'p4', 'p5']);
  });

  it('an operand outside the values the field holds → INVALID_FILTER_FIELDS_PARAM naming it', async ({
    ids,
    error,
  }) => {
    const outside: [string, string][] = [
      ['views', '[gt]=99999999999999999999999999'],
      ['views', '[lt]=-9007199254740992'],
      ['views', '[eq]=1.5'],
      ['views', '[eq]=1e3'],
      ['rating', '[gt]=1e309'],
      ['rating', '[lt]=-1e999'],
      // A zone carries these out of years 0001–9999 (the first answered 500).
      ['starts_at', '[gt]=9999-12-31T23:59:59-14:00'],
      ['starts_at', '[lt]=0001-01-01T00:00:00%2B14:00'],
      ['_created_at', '[gt]=9999-12-31T23:30:00-01:00'],
    ];
    for (const [field, rest] of outside) {
      const d = await error(f(field, rest), 'INVALID_FILTER_FIELDS_PARAM');
      expect(d['param'], rest).toBe(`filter[fields][${field}]${rest.slice(0, rest.indexOf('='))}`);
    }
    for (const bad of ['[gt]=2147483648', '[lt]=99999999999999999999', '[eq]=1.5']) {
      const d = await error(
        `?filter[type]=page&filter[fields][position]${bad}`,
        'INVALID_FILTER_FIELDS_PARAM',
      );
      expect(d['field']).toBe('position');
    }
    // The edges still answer.
    expect(await ids(f('views', '[lt]=9007199254740991'))).toEqual(['p1', 'p2', 'p4', 'p5']);
    expect(await ids(f('views', '[gt]=-9007199254740991'))).toEqual(['p1', 'p2', 'p4', 'p5']);
    expect(await ids(f('rating', '[lt]=1.7e308'))).toEqual(['p1', 'p2']);
    expect(await ids(f('starts_at', '[lt]=9999-12-31T23:59:59Z'))).toEqual(['p1', 'p2']);
    expect(await ids('?filter[type]=page&filter[fields][position][lt]=2147483647')).toHaveLength(
      30,
    );
  });

  it('boolean: eq (a missing value counts as false)', async ({ ids }) => {
    expect(await ids(f('featured', '[eq]=true'))).toEqual(['p1']);
    expect(await ids(f('featured', '[eq]=false'))).toEqual(['p2', 'p4', 'p5']);
  });

  it('link and file: eq, neq, in, not_in, exists', async ({ ids }) => {
    expect(await ids(f('author', '[eq]=p2'))).toEqual(['p1']);
    expect(await ids(f('author', '[neq]=p2'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('author', '[in][]=p2&filter[fields][author][in][]=p9'))).toEqual(['p1']);
    expect(await ids(f('author', '[not_in][]=p2'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('author', '[exists]=true'))).toEqual(['p1']);
    expect(await ids(f('cover', '[eq]=u1'))).toEqual(['p1']);
    expect(await ids(f('cover', '[exists]=false'))).toEqual(['p2', 'p4', 'p5']);
  });

  it('links and gallery: eq (exact), any_in, all_in, not_in, exists', async ({ ids }) => {
    expect(await ids(f('related', '[eq][]=p3'))).toEqual(['p2']);
    expect(await ids(f('related', '[eq][]=p3&filter[fields][related][eq][]=p2'))).toEqual([]);
    expect(await ids(f('related', '[any_in][]=p3'))).toEqual(['p1', 'p2']);
    expect(await ids(f('related', '[anyIn][]=p2&filter[fields][related][anyIn][]=p9'))).toEqual([
      'p1',
    ]);
    expect(await ids(f('related', '[all_in][]=p2&filter[fields][related][all_in][]=p3'))).toEqual([
      'p1',
    ]);
    expect(await ids(f('related', '[not_in][]=p2'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('related', '[exists]=true'))).toEqual(['p1', 'p2']);
    expect(await ids(f('photos', '[eq][]=u1&filter[fields][photos][eq][]=u2'))).toEqual(['p1']);
    expect(await ids(f('photos', '[any_in][]=u3&filter[fields][photos][any_in][]=u2'))).toEqual([
      'p1',
      'p2',
    ]);
    expect(await ids(f('photos', '[allIn][]=u1&filter[fields][photos][allIn][]=u2'))).toEqual([
      'p1',
    ]);
    expect(await ids(f('photos', '[not_in][]=u1'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('photos', '[exists]=false'))).toEqual(['p4', 'p5']);
  });

  it('lat_lon: near (metres), exists; color: exists', async ({ ids }) => {
    const milan = '[near][latitude]=45.46&filter[fields][place][near][longitude]=9.18';
    expect(await ids(f('place', `${milan}&filter[fields][place][near][radius]=5000`))).toEqual([
      'p1',
    ]);
    expect(await ids(f('place', `${milan}&filter[fields][place][near][radius]=600000`))).toEqual([
      'p1',
      'p2',
    ]);
    expect(await ids(f('place', '[exists]=true'))).toEqual(['p1', 'p2']);
    expect(await ids(f('color', '[exists]=true'))).toEqual(['p1']);
    expect(await ids(f('color', '[exists]=false'))).toEqual(['p2', 'p4', 'p5']);
  });

  it('meta columns: id, _status, _is_valid, timestamps, position, parent_id', async ({ ids }) => {
    expect(await ids(f('id', '[in][]=p1&filter[fields][id][in][]=p5'))).toEqual(['p1', 'p5']);
    expect(await ids(f('id', '[neq]=p1'))).toEqual(['p2', 'p4', 'p5']);
    expect(await ids(f('_status', '[eq]=updated'))).toEqual(['p4']);
    expect(await ids(f('_status', '[in][]=draft') + '&version=current')).toEqual(['p3']);
    expect(await ids(f('_status', '[not_in][]=published'))).toEqual(['p4']);
    expect(await ids(f('_is_valid', '[eq]=false'))).toEqual(['p5']);
    expect(await ids(f('_created_at', '[gt]=2024-01-01T00:00:02'))).toEqual(['p4', 'p5']);
    expect(await ids(f('_updated_at', '[gte]=2024-01-01T00:01:00Z'))).toEqual(['p4']);
    expect(await ids(f('_published_at', '[exists]=true'))).toEqual(['p1', 'p2', 'p4', 'p5']);
    expect(await ids('?filter[type]=page&filter[fields][position][lte]=2')).toEqual([
      'pg34',
      'pg33',
    ]);
    expect(await ids('?filter[type]=category&filter[fields][parent_id][eq]=c1')).toEqual(['c2']);
    expect(await ids('?filter[type]=category&filter[fields][parent_id][exists]=false')).toEqual([
      'c1',
    ]);
  });

  it('several operators and fields combine with AND; only_valid', async ({ list, ids }) => {
    expect(
      await ids(f('views', '[gte]=5&filter[fields][views][lt]=20&filter[fields][slug][neq]=four')),
    ).toEqual(['p1', 'p5']);
    expect(await ids(`?${POST}&filter[only_valid]=true`)).toEqual(['p1', 'p2', 'p4']);
    expect((await list(`?${POST}&filter[only_valid]=true`)).meta.total_count).toBe(3);
  });

  it('a 10,000-character filter never answers 500', async ({ get, ids }) => {
    const long = 'a'.repeat(10_000);
    expect(await ids(f('title', `[eq]=${long}`))).toEqual([]);
    const { status } = await get(f('title', `[matches][pattern]=${'(a|b)*'.repeat(1700)}`));
    expect([200, 422]).toContain(status);
    const { status: s2 } = await get(`?filter[query]=${long}`);
    expect(s2).toBe(200);
    const { status: s3 } = await get(`?filter[ids]=${long}`);
    expect(s3).toBe(200);
  });
});

describe('GET /items: nested, tree meta, counts after writes', () => {
  it('nested=true expands blocks recursively and never links', async ({ list }) => {
    const body = await list('?filter[ids]=p1&nested=true');
    const item = body.data[0]!;
    expect(item.attributes['author']).toBe('p2');
    const sections = item.attributes['sections'] as {
      id: string;
      attributes: { text: string; inner: { id: string; attributes: { text: string } }[] };
    }[];
    expect(sections[0]!.id).toBe('blk1');
    expect(sections[0]!.attributes.text).toBe('Zebra crossing');
    expect(sections[0]!.attributes.inner[0]!.attributes.text).toBe('Xylophone');
    const flat = await list('?filter[ids]=p1');
    expect(flat.data[0]!.attributes['sections']).toEqual(['blk1']);
  });

  it('meta.has_children for tree models', async ({ list }) => {
    const body = await list('?filter[type]=category');
    expect(body.data.map((i) => [i.id, i.meta['has_children']])).toEqual([
      ['c1', true],
      ['c2', false],
    ]);
  });

  it('keeps total_count exact as records are written and deleted', async ({ db, list }) => {
    await defineModel(db, ENV, {
      id: 'm_tmp',
      apiKey: 'tmp',
      fields: [{ apiKey: 'n', fieldType: 'integer' }],
    });
    const count = async (q = '') => (await list(`?filter[type]=tmp${q}`)).meta.total_count;
    expect(await count()).toBe(0);
    for (let i = 0; i < 3; i++) {
      await putRecord(db, ENV, LOCALES, {
        id: `t${i}`,
        itemTypeId: 'm_tmp',
        mode: i < 2 ? 'publish' : 'save',
        createdAt: at(200 + i),
        attributes: { n: i },
      });
    }
    expect(await count()).toBe(2);
    expect(await count('&version=current')).toBe(3);
    await putRecord(db, ENV, LOCALES, {
      id: 't0',
      itemTypeId: 'm_tmp',
      mode: 'unpublish',
      createdAt: at(200),
      updatedAt: at(300),
      attributes: { n: 0 },
    });
    expect(await count()).toBe(1);
    await deleteRecords(db, [
      { environment: ENV, id: 't1', updatedAt: at(400), currentVersion: null },
    ]);
    expect(await count()).toBe(0);
    expect(await count('&version=current')).toBe(2);
    expect(await count('&filter[fields][n][gte]=0&version=current')).toBe(2);
  });
});

describe('GET /items: indexes and metrics', () => {
  it('creates an expression index for a field sort in the background', async ({
    db,
    deps,
    list,
  }) => {
    await list(`?${POST}&order_by=rating_DESC`);
    await deps.indexes.idle();
    const { rows } = await db.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'records_x_%'`,
    );
    expect(rows.map((r) => r.indexdef).join('\n')).toMatch(
      /herald_numeric\(\(published_attributes -> 'rating'/,
    );
    const stats = await db.query(
      `SELECT 1 FROM pg_statistic_ext WHERE stxnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`,
    );
    expect(stats.rowCount).toBeGreaterThan(0);
  });

  it('creates a GIN index on the full-text slice (environment, version, locale) searched', async ({
    db,
    deps,
    list,
  }) => {
    await list('?filter[query]=fox&locale=it&version=current');
    await deps.indexes.idle();
    const { rows } = await db.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'record_texts_x_%'`,
    );
    expect(rows.map((r) => r.indexdef).join('\n')).toMatch(
      /gin \(document\) WHERE \(\(environment = 'main'::text\) AND \(version = 'current'::text\) AND \(locale = 'it'::text\)\)/,
    );
  });

  it('exports query duration by shape', async ({ api, list }) => {
    await list(`?filter[query]=fox`);
    const res = await fetch(`${api.url}/metrics`);
    const text = await res.text();
    expect(text).toMatch(/herald_items_query_duration_seconds_count\{shape="search"\} [1-9]/);
    expect(text).toMatch(
      /herald_items_query_duration_seconds_count\{shape="list_filtered"\} [1-9]/,
    );
  });
});

describe('GET /items/:id', () => {
  it('returns the published version by default, current on request, 404 otherwise', async ({
    one,
  }) => {
    const p4 = await one('p4');
    expect(p4.status).toBe(200);
    expect((p4.body.data['attributes'] as Record<string, unknown>)['title']).toEqual({
      en: 'Old title',
    });
    const p4current = await one('p4?version=current');
    expect((p4current.body.data['attributes'] as Record<string, unknown>)['title']).toEqual({
      en: 'New title',
    });
    expect((await one('p3')).status).toBe(404);
    expect((await one('p3?version=current')).status).toBe(200);
    const missing = await one('nope');
    expect(missing.status).toBe(404);
    expect(JSON.stringify(missing.body)).toContain('NOT_FOUND');
    expect((await one('p1?version=bad')).status).toBe(422);
    expect((await one('p1?nested=1')).status).toBe(422);
  });

  it('an id that cannot exist is a 404 NOT_FOUND, whatever its bytes', async ({ one }) => {
    for (const id of [
      'a%00b',
      '%00',
      'p1%00',
      'x'.repeat(65),
      'p%201',
      '%F0%9F%98%80',
      '..%2Fp1',
    ]) {
      const res = await one(id);
      expect(res.status, id).toBe(404);
      expect(JSON.stringify(res.body)).toContain('NOT_FOUND');
    }
    await fc.assert(
      fc.asyncProperty(idBytes(16), async (bytes) => {
        const id = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
        const { status, body } = await one(id);
        // 400 INVALID_REQUEST when the bytes are not UTF-8, else 404 (no such record).
        expect([400, 404], `${id} → ${JSON.stringify(body)}`).toContain(status);
      }),
      { numRuns: 150 },
    );
  });

  it('nested=true expands blocks', async ({ one }) => {
    const { body } = await one('p1?nested=true');
    const sections = (body.data['attributes'] as Record<string, unknown>)['sections'] as {
      id: string;
    }[];
    expect(sections[0]!.id).toBe('blk1');
  });
});
