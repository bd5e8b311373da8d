import { describe, expect } from 'vitest';
import { defineModel, putRecord } from '@herald/testkit';
import { upsertEnvironment } from '@herald/store';
import { readTest } from '../../test/fixtures.js';

/**
 * The same SQL on the single process's embedded PostgreSQL (18): migration 004, counts, filters,
 * search, lazy indexes.
 */
const it = readTest({ db: 'embedded', expressionIndexes: true }).extend(
  'list',
  ({ api }) =>
    async (query: string): Promise<{ ids: string[]; total: number }> => {
      const { status, body } = await api.call<{
        data: { id: string }[];
        meta: { total_count: number };
      }>('GET', `/items?${query}`);
      expect(status, JSON.stringify(body)).toBe(200);
      return { ids: body.data.map((i) => i.id), total: body.meta.total_count };
    },
);

it.beforeAll(async ({ db }) => {
  await upsertEnvironment(db, 'main', ['en', 'it']);
  await defineModel(db, 'main', {
    id: 'm1',
    apiKey: 'post',
    fields: [
      { apiKey: 'title', fieldType: 'string', localized: true },
      { apiKey: 'views', fieldType: 'integer' },
      { apiKey: 'at', fieldType: 'date_time' },
      { apiKey: 'refs', fieldType: 'links' },
      { apiKey: 'content', fieldType: 'structured_text' },
    ],
  });
  for (let i = 0; i < 4; i++) {
    await putRecord(db, 'main', ['en', 'it'], {
      id: `r${i}`,
      itemTypeId: 'm1',
      mode: i < 3 ? 'publish' : 'save',
      createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
      attributes: {
        title: { en: `Title ${i}`, it: `Titolo ${i}` },
        views: i * 10,
        at: `2024-01-0${i + 1}T10:00:00`,
        refs: [`r${(i + 1) % 4}`],
        content: {
          schema: 'dast',
          document: { type: 'root', children: [{ type: 'span', value: `word${i}` }] },
        },
      },
    });
  }
});

describe('GET /items on the embedded PostgreSQL', () => {
  it('counts, filters, sorts and searches like on Postgres', async ({ list }) => {
    expect(await list('filter[type]=post')).toEqual({ ids: ['r0', 'r1', 'r2'], total: 3 });
    expect((await list('filter[type]=post&version=current')).total).toBe(4);
    expect(
      await list('filter[type]=post&filter[fields][views][gte]=10&order_by=views_DESC'),
    ).toEqual({ ids: ['r2', 'r1'], total: 2 });
    expect(
      (await list('filter[type]=post&filter[fields][at][lt]=2024-01-02T10:00:00Z')).ids,
    ).toEqual(['r0']);
    expect((await list('filter[type]=post&filter[fields][refs][any_in][]=r2')).ids).toEqual(['r1']);
    expect(
      (await list('filter[type]=post&filter[fields][content][matches][pattern]=WORD2')).ids,
    ).toEqual(['r2']);
    expect(
      (await list('filter[type]=post&filter[fields][title][matches][pattern]=^titolo 1&locale=it'))
        .ids,
    ).toEqual(['r1']);
    expect((await list('filter[query]=titolo&locale=it&page[limit]=1')).total).toBe(3);
  });

  it('answers an invalid regular expression with 422', async ({ api }) => {
    const res = await api.fetch(
      '/items?filter[type]=post&filter[fields][title][matches][pattern]=(',
    );
    expect(res.status).toBe(422);
    expect(await res.text()).toContain('INVALID_FILTER_FIELDS_PARAM');
  });
});
