import { describe, expect } from 'vitest';
import { insertWebhook } from '@herald/store';
import { testWebhookInput } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

const it = appTest(createApp);

/** Ids of the webhooks an answer lists. */
const ids = (body: { data: { id: string }[] }) => body.data.map((w) => w.id);

/** name → id of the seeded webhooks. */
const seeded = new Map<string, string>();
it.beforeAll(async ({ db }) => {
  const hooks: [string, string][] = [
    ['Search indexer', 'https://search.example.com/hook'],
    ['CDN purge', 'https://cdn.example.net/purge'],
    ['Slack alerts', 'https://hooks.slack.example/T000/B000'],
    ['100% cache_warm', 'https://warm.example.org/SEARCH'],
    ['Build trigger', 'https://ci.example.com/build'],
  ];
  for (const [name, url] of hooks) {
    seeded.set(name, (await insertWebhook(db, testWebhookInput({ name, url }))).id);
  }
});

describe('GET /webhooks, paged and searched (extension)', () => {
  it('answers every webhook without meta when called without parameters', async ({ api }) => {
    const all = await api.call('GET', '/webhooks');
    expect(all.status).toBe(200);
    expect(ids(all.body)).toEqual([...seeded.values()]);
    expect(all.body.meta).toBeUndefined();
  });

  it('pages by offset and limit, oldest first, with meta.total_count', async ({ api }) => {
    const first = await api.call('GET', '/webhooks?page[limit]=2');
    expect(first.status).toBe(200);
    expect(ids(first.body)).toEqual([...seeded.values()].slice(0, 2));
    expect(first.body.meta).toEqual({ total_count: 5 });
    const last = await api.call('GET', '/webhooks?page[offset]=4&page[limit]=2');
    expect(ids(last.body)).toEqual([...seeded.values()].slice(4));
    const past = await api.call('GET', '/webhooks?page[offset]=10');
    expect(past.body).toEqual({ data: [], meta: { total_count: 5 } });
    // A page holds the same resources as the unpaginated list.
    const listed = (await api.call('GET', '/webhooks')).body.data;
    expect(first.body.data).toEqual(listed.slice(0, 2));
  });

  it('searches name and URL, ignoring case, with % and _ taken literally', async ({ api }) => {
    const search = async (query: string) => {
      const answer = await api.call('GET', `/webhooks?filter[query]=${encodeURIComponent(query)}`);
      expect(answer.status).toBe(200);
      expect(answer.body.meta.total_count).toBe(answer.body.data.length);
      return ids(answer.body).map((id) => [...seeded].find(([, v]) => v === id)![0]);
    };
    expect(await search('search')).toEqual(['Search indexer', '100% cache_warm']);
    expect(await search('EXAMPLE.COM')).toEqual(['Search indexer', 'Build trigger']);
    expect(await search('%')).toEqual(['100% cache_warm']);
    expect(await search('_')).toEqual(['100% cache_warm']);
    expect(await search('nothing like it')).toEqual([]);
    expect(await search('')).toHaveLength(5);
    const paged = await api.call('GET', '/webhooks?filter[query]=example&page[limit]=1');
    expect(paged.body.meta).toEqual({ total_count: 5 });
    expect(paged.body.data).toHaveLength(1);
  });

  it('refuses other parameters and values with 422 INVALID_PARAMS', async ({ api }) => {
    const bad = {
      'page[limit]=0': 'page.limit',
      'page[limit]=501': 'page.limit',
      'page[offset]=-1': 'page.offset',
      'page[offset]=1e3': 'page.offset',
      'page[size]=3': 'page',
      'filter[name]=x': 'filter',
      [`filter[query]=${'x'.repeat(2049)}`]: 'filter.query',
      'filter[query][]=x': 'filter.query',
      'sort=name': '',
    };
    for (const [query, param] of Object.entries(bad)) {
      const answer = await api.call('GET', `/webhooks?${query}`);
      expect(answer.status, query).toBe(422);
      expect(answer.body.data[0].attributes.code).toBe('INVALID_PARAMS');
      expect(answer.body.data[0].attributes.details.param, query).toBe(param);
    }
  });
});

describe('GET /webhook_stats?filter[ids] (extension)', () => {
  it("answers only the listed webhooks' stats, in id order", async ({ api }) => {
    const [a, b, c] = [...seeded.values()];
    const some = await api.call('GET', `/webhook_stats?window=1h&filter[ids]=${c},${a},999999`);
    expect(some.status).toBe(200);
    expect(ids(some.body)).toEqual([a, c]);
    expect(some.body.meta).toEqual({ total_count: 2 });
    expect(some.body.data[0].attributes).toMatchObject({ window: '1h', attempts: { total: 0 } });
    const repeated = await api.call('GET', `/webhook_stats?filter[ids][]=${b}&filter[ids][]=${a}`);
    expect(ids(repeated.body)).toEqual([a, b]);
    const all = await api.call('GET', '/webhook_stats');
    expect(ids(all.body)).toEqual([...seeded.values()]);
  });

  it('refuses ids that are not webhook ids, too many, or other filters', async ({ api }) => {
    const many = Array.from({ length: 501 }, (_, i) => i + 1).join(',');
    for (const query of [
      'filter[ids]=',
      'filter[ids]=1,x',
      'filter[ids]=0',
      `filter[ids]=${many}`,
      'filter[webhook]=1',
    ]) {
      const answer = await api.call('GET', `/webhook_stats?${query}`);
      expect(answer.status, query).toBe(422);
      expect(answer.body.data[0].attributes.code).toBe('INVALID_PARAMS');
    }
    // The single webhook's stats take no filter.
    const one = await api.call('GET', `/webhooks/${[...seeded.values()][0]}/stats?filter[ids]=1`);
    expect(one.status).toBe(422);
  });
});
