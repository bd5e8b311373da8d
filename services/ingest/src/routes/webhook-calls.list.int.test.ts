import { describe, expect } from 'vitest';
import {
  WEBHOOK_CALL_COUNT_CAP,
  createWebhookCallMonths,
  createWebhookCalls,
  type Queryable,
} from '@herald/store';
import type { TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

// GET /webhook_calls (docs/api.md): what the store's tests do not see, the route's own part.
const it = appTest(createApp);

const createWebhook = async (
  api: TestApi,
  name: string,
  attributes: Record<string, unknown> = {},
): Promise<string> => {
  const { status, body } = await api.call('POST', '/webhooks', {
    data: {
      type: 'webhook',
      attributes: {
        name,
        url: 'https://example.com/hook',
        headers: {},
        events: [{ entity_type: 'item', event_types: ['update'] }],
        custom_payload: null,
        http_basic_user: null,
        http_basic_password: null,
        ...attributes,
      },
    },
  });
  expect(status).toBe(201);
  return (body as { data: { id: string } }).data.id;
};

/** `count` stored events of `entity`, `prefix`-1…, one second apart from `start`. */
const insertEvents = (
  db: Queryable,
  prefix: string,
  entity: string,
  count: number,
  start: string,
) =>
  db.query(
    `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
       entity_id, occurred_at, entity)
     SELECT $1 || g, 'main', true, 'item', 'update', $2, $4::timestamptz + g * interval '1 second',
       '{}'
     FROM generate_series(1, $3::int) g`,
    [prefix, entity, count, start],
  );

const callsOf = (db: Queryable, eventIds: string[], webhookIds: string[]): Promise<unknown> =>
  createWebhookCalls(
    db,
    eventIds.map((id) => ({ event: { id, entityType: 'item', eventType: 'update' }, webhookIds })),
  );

interface ListAnswer {
  data: {
    id: string;
    attributes: { event_id: string };
    relationships: { webhook: { data: { type: string; id: string } } };
  }[];
  included: { type: string; id: string; attributes: Record<string, unknown> }[];
  meta: { total_count: number };
}

/** A webhook as GET /webhooks/:id shows it, without the signing secret `included` leaves out. */
const withoutSigningSecret = (webhook: unknown) => {
  const { attributes, ...resource } = webhook as { attributes: Record<string, unknown> };
  const { signing_secret: _secret, ...shown } = attributes;
  return { ...resource, attributes: shown };
};

describe('GET /webhook_calls', () => {
  it("includes the page's webhooks as GET /webhooks/:id shows them but for secrets, a deleted one not at all", async ({
    api,
    db,
  }) => {
    const kept = await createWebhook(api, 'kept');
    const gone = await createWebhook(api, 'gone');
    await insertEvents(db, 'inc-', 'inc-entity', 2, '2026-01-01');
    await callsOf(db, ['inc-1', 'inc-2'], [kept, gone]);
    const query = '/webhook_calls?filter[fields][entity_id][eq]=inc-entity';
    const listed = await api.call<ListAnswer>('GET', query);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((call) => call.relationships.webhook.data)).toEqual([
      { type: 'webhook', id: kept },
      { type: 'webhook', id: gone },
      { type: 'webhook', id: kept },
      { type: 'webhook', id: gone },
    ]);
    const shown = await Promise.all(
      [kept, gone].map(async (id) =>
        withoutSigningSecret((await api.call('GET', `/webhooks/${id}`)).body['data']),
      ),
    );
    expect(listed.body.included).toEqual(shown);
    // Only the webhooks of the page.
    const one = await api.call<ListAnswer>('GET', `${query}&page[limit]=1&page[offset]=1`);
    expect(one.body.included).toEqual([shown[1]]);
    expect((await api.call('DELETE', `/webhooks/${gone}`)).status).toBe(200);
    const after = await api.call<ListAnswer>('GET', query);
    expect(after.body.data).toHaveLength(4);
    expect(after.body.included).toEqual([shown[0]]);
    const none = await api.call<ListAnswer>(
      'GET',
      `${query}&filter[fields][webhook_id][eq]=${gone}`,
    );
    expect(none.body).toMatchObject({ included: [], meta: { total_count: 2 } });
  });

  it('includes each webhook without what the call log hides: password, credential headers and query values, signing secret', async ({
    api,
    db,
  }) => {
    const hook = await createWebhook(api, 'secretive', {
      url: 'https://example.com/hook?token=url-secret-1&page=2',
      headers: {
        Authorization: 'Bearer hdr-secret-2',
        'X-Tenant': 'tenant-3',
        'X-Team': 'content',
      },
      redact_headers: ['x-tenant'],
      http_basic_user: 'herald',
      http_basic_password: 'basic-secret-4',
    });
    const whole = (await api.call('GET', `/webhooks/${hook}`)).body['data'] as {
      attributes: Record<string, unknown>;
    };
    const signingSecret = whole.attributes['signing_secret'] as string;
    expect(signingSecret).toMatch(/^whsec_/);
    await insertEvents(db, 'sec-', 'sec-entity', 1, '2026-03-01');
    await callsOf(db, ['sec-1'], [hook]);

    const listed = await api.call<ListAnswer>(
      'GET',
      '/webhook_calls?filter[fields][entity_id][eq]=sec-entity',
    );
    expect(listed.status).toBe(200);
    expect(listed.body.included).toEqual([
      withoutSigningSecret({
        ...whole,
        attributes: {
          ...whole.attributes,
          url: 'https://example.com/hook?token=***&page=2',
          headers: { Authorization: 'Bearer ***', 'X-Tenant': '***', 'X-Team': 'content' },
          http_basic_password: '***',
        },
      }),
    ]);
    const answer = JSON.stringify(listed.body);
    for (const secret of ['url-secret-1', 'hdr-secret-2', 'tenant-3', 'basic-secret-4']) {
      expect(answer).not.toContain(secret);
    }
    expect(answer).not.toContain(signingSecret.slice('whsec_'.length));
  });

  it('filters by event id and by entity id', async ({ api, db }) => {
    const hook = await createWebhook(api, 'filtered');
    await insertEvents(db, 'flt-a', 'flt-entity-a', 3, '2026-02-01');
    await insertEvents(db, 'flt-b', 'flt-entity-b', 1, '2026-02-01');
    await callsOf(db, ['flt-a1', 'flt-a2', 'flt-a3', 'flt-b1'], [hook]);
    const byEntity = await api.call<ListAnswer>(
      'GET',
      '/webhook_calls?filter[fields][entity_id][eq]=flt-entity-a&order_by=created_at_desc',
    );
    expect(byEntity.body.data.map((call) => call.attributes.event_id)).toEqual([
      'flt-a3',
      'flt-a2',
      'flt-a1',
    ]);
    expect(byEntity.body.meta.total_count).toBe(3);
    const byEvent = await api.call<ListAnswer>(
      'GET',
      '/webhook_calls?filter[fields][event_id][eq]=flt-b1',
    );
    expect(byEvent.body.data.map((call) => call.attributes.event_id)).toEqual(['flt-b1']);
    expect(byEvent.body.meta.total_count).toBe(1);
  });

  it(`counts exactly up to ${WEBHOOK_CALL_COUNT_CAP} calls, and past that never fewer than match`, async ({
    api,
    db,
  }) => {
    const hook = await createWebhook(api, 'many');
    // Calls made back then: in their month's partition, with their month's ids.
    const callsMadeAt = (events: string, at: string | null) =>
      db.query(
        `INSERT INTO webhook_calls (id, event_id, webhook_id, entity_type, event_type, created_at)
         SELECT herald_webhook_call_id(coalesce($3, occurred_at)), id, $1, 'item', 'update',
           coalesce($3, occurred_at)
         FROM events WHERE id LIKE $2 ORDER BY occurred_at`,
        [hook, events, at],
      );
    await createWebhookCallMonths(db, new Date('2025-02-01T00:00:00Z'), 2);
    // CAP + 1 calls, one second apart from 2025-03-01T00:00:01Z, in one statement.
    await insertEvents(db, 'cap-', 'cap-entity', WEBHOOK_CALL_COUNT_CAP + 1, '2025-03-01');
    await callsMadeAt('cap-%', null);
    // And one in February, before the ranges below.
    await insertEvents(db, 'cap-early-', 'cap-entity', 1, '2025-02-10');
    await callsMadeAt('cap-early-%', '2025-02-10T00:00:00Z');
    const total = async (query: string): Promise<number> => {
      const { status, body } = await api.call<ListAnswer>(
        'GET',
        `/webhook_calls?page[limit]=1&filter[fields][webhook_id][eq]=${hook}&${query}`,
      );
      expect(status).toBe(200);
      return body.meta.total_count;
    };
    const from = '2025-03-01T00:00:00Z';
    // The cap exactly: every call but the last.
    const cap = new Date(Date.parse(from) + (WEBHOOK_CALL_COUNT_CAP + 1) * 1000).toISOString();
    expect(
      await total(`filter[fields][created_at][gt]=${from}&filter[fields][created_at][lt]=${cap}`),
    ).toBe(WEBHOOK_CALL_COUNT_CAP);
    // One more: a bound, the calls of the webhook in March 2025 (not February's), here exactly as
    // many.
    expect(await total(`filter[fields][created_at][gt]=${from}`)).toBe(WEBHOOK_CALL_COUNT_CAP + 1);
    // A bound above the truth: the range's month holds more calls than the range.
    await insertEvents(db, 'cap-late-', 'cap-entity', 5, '2025-03-30');
    await callsMadeAt('cap-late-%', '2025-03-30T00:00:00Z');
    expect(
      await total(
        `filter[fields][created_at][gt]=${from}&filter[fields][created_at][lt]=2025-03-29`,
      ),
    ).toBe(WEBHOOK_CALL_COUNT_CAP + 6);
    // Counted by webhook only: exact, whatever the number.
    expect(await total('')).toBe(WEBHOOK_CALL_COUNT_CAP + 7);
  });

  it('refuses a malformed event or entity filter with 422 INVALID_PARAMS', async ({ api }) => {
    for (const bad of [
      'filter[fields][event_id][eq]=',
      'filter[fields][entity_id][eq]=',
      'filter[fields][event_id]=e1',
      'filter[fields][entity_id][in]=r1',
      'filter[fields][event_id][eq][]=e1',
    ]) {
      const { status, body } = await api.call('GET', `/webhook_calls?${bad}`);
      expect({ bad, status }).toEqual({ bad, status: 422 });
      const errors = (body as { data: { type: string; attributes: { code: string } }[] }).data;
      expect(errors.length).toBeGreaterThan(0);
      for (const error of errors) {
        expect(error).toMatchObject({ type: 'api_error', attributes: { code: 'INVALID_PARAMS' } });
      }
    }
  });
});
