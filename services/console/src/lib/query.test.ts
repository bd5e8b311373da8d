import { describe, expect, it } from 'vitest';
import { toQueryString, withQuery } from './query.js';
import { recordsParams } from './records-query.js';

describe('toQueryString', () => {
  it('writes nested objects in bracket notation and arrays as key[]', () => {
    expect(
      toQueryString({
        filter: { fields: { title: { eq: 'a b&c' } }, type: 'post' },
        ids: ['1', '2'],
        page: { limit: 30 },
      }),
    ).toBe('filter[fields][title][eq]=a%20b%26c&filter[type]=post&ids[]=1&ids[]=2&page[limit]=30');
  });

  it('drops empty strings, null and undefined', () => {
    expect(toQueryString({ a: '', b: null, c: undefined, d: { e: '' }, f: 'x' })).toBe('f=x');
    expect(withQuery('/items', { a: '' })).toBe('/items');
  });

  it('encodes keys that hold reserved characters, keeping brackets', () => {
    expect(toQueryString({ filter: { fields: { 'a&b': { eq: '1' } } } })).toBe(
      'filter[fields][a%26b][eq]=1',
    );
  });
});

describe('recordsParams', () => {
  const base = {
    model: '',
    text: '',
    locale: '',
    version: 'published' as const,
    orderBy: '',
    filters: [],
    offset: 0,
    limit: 30,
  };

  it('maps the screen state to GET /items parameters', () => {
    const query = toQueryString(
      recordsParams({
        ...base,
        model: 'post',
        text: 'hello',
        locale: 'it',
        version: 'current',
        orderBy: '_updated_at_DESC',
        filters: [
          { key: 1, field: 'title', operator: 'matches', value: 'ciao' },
          { key: 2, field: 'id', operator: 'in', value: 'a, b' },
          { key: 3, field: 'views', operator: 'gt', value: '' },
        ],
        offset: 60,
      }),
    );
    expect(decodeURIComponent(query)).toBe(
      'filter[type]=post&filter[query]=hello&filter[fields][title][matches][pattern]=ciao' +
        '&filter[fields][id][in][]=a&filter[fields][id][in][]=b&locale=it&version=current' +
        '&order_by=_updated_at_DESC&page[offset]=60&page[limit]=30',
    );
  });

  it('sends only paging and version when nothing is filled in', () => {
    expect(decodeURIComponent(toQueryString(recordsParams(base)))).toBe(
      'version=published&page[offset]=0&page[limit]=30',
    );
  });
});
