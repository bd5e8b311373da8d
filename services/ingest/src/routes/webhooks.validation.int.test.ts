import { describe, expect } from 'vitest';
import { testWebhookAttributes, type TestApi } from '@herald/testkit';
import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';
import { REQUIRED_ATTRIBUTES } from '../../test/webhook-attributes.js';

/**
 * Every rule of docs/api.md, The webhook resource: status, code, details.field and details.code.
 */
const it = appTest(createApp);

interface ErrorBody {
  data: { attributes: { code: string; details: Record<string, unknown> } }[];
}

const send = (api: TestApi, method: string, path: string, body: string) =>
  api.call<ErrorBody>(method, path, body);
const createWith = (api: TestApi, attributes: Record<string, unknown>) =>
  send(api, 'POST', '/webhooks', JSON.stringify({ data: { type: 'webhook', attributes } }));
/** PUT `data` on a webhook created for it. */
const putOnNew = async (api: TestApi, data: Record<string, unknown>) => {
  const created = await createWith(api, testWebhookAttributes());
  const id = (created.body as unknown as { data: { id: string } }).data.id;
  return send(api, 'PUT', `/webhooks/${id}`, JSON.stringify({ data }));
};

type Rule = [
  description: string,
  attributes: Record<string, unknown>,
  field: string,
  code: string,
  /** The attributes are the whole set (a key left out), not overrides of a valid set. */
  complete?: true,
];

const item = (extra: Record<string, unknown>) => [{ entity_type: 'item', ...extra }];
const withFilter = (filter: unknown) =>
  item({ event_types: ['publish'], filter }) as Record<string, unknown>[];

const RULES: Rule[] = [
  // Required keys (the nullable three must still be present).
  ...REQUIRED_ATTRIBUTES.map((key): Rule => {
    const attributes: Record<string, unknown> = testWebhookAttributes();
    delete attributes[key];
    return [`${key} missing`, attributes, key, 'VALIDATION_REQUIRED', true];
  }),
  // name
  ['name blank', { name: '   ' }, 'name', 'VALIDATION_REQUIRED'],
  ['name null', { name: null }, 'name', 'VALIDATION_REQUIRED'],
  ['name not a string', { name: 12 }, 'name', 'VALIDATION_TYPE'],
  ['name with a lone surrogate', { name: 'a\ud800b' }, 'name', 'VALIDATION_FORMAT'],
  [
    'filter id with a lone surrogate',
    { events: withFilter({ entity_type: 'item', entity_ids: ['ok', 'x\udc00'] }) },
    'events.0.filter.entity_ids.1',
    'VALIDATION_FORMAT',
  ],
  ['name over 255 chars', { name: 'n'.repeat(256) }, 'name', 'VALIDATION_LENGTH'],
  // url
  ['url not a string', { url: ['https://x.test'] }, 'url', 'VALIDATION_TYPE'],
  ['url blank', { url: '' }, 'url', 'VALIDATION_REQUIRED'],
  ['url relative', { url: '/hook' }, 'url', 'VALIDATION_FORMAT'],
  ['url ftp', { url: 'ftp://example.com/x' }, 'url', 'VALIDATION_FORMAT'],
  ['url javascript', { url: 'javascript:alert(1)' }, 'url', 'VALIDATION_FORMAT'],
  ['url with spaces', { url: 'https://example.com/a b' }, 'url', 'VALIDATION_FORMAT'],
  ['url over 2048', { url: `https://example.com/${'a'.repeat(2048)}` }, 'url', 'VALIDATION_LENGTH'],
  ['url tag in host', { url: 'https://{{host}}.example.com/' }, 'url', 'VALIDATION_FORMAT'],
  ['url tag in scheme', { url: '{{scheme}}://example.com/' }, 'url', 'VALIDATION_FORMAT'],
  ['url tag syntax error', { url: 'https://example.com/{{#entity}}' }, 'url', 'VALIDATION_FORMAT'],
  ['url loopback', { url: 'http://127.0.0.1/' }, 'url', 'VALIDATION_FORMAT'],
  ['url loopback shorthand', { url: 'http://0x7f.1/' }, 'url', 'VALIDATION_FORMAT'],
  ['url localhost', { url: 'http://localhost:3000/' }, 'url', 'VALIDATION_FORMAT'],
  ['url RFC 1918', { url: 'http://192.168.1.10/' }, 'url', 'VALIDATION_FORMAT'],
  ['url metadata', { url: 'http://169.254.169.254/latest' }, 'url', 'VALIDATION_FORMAT'],
  ['url CGNAT', { url: 'http://100.64.0.1/' }, 'url', 'VALIDATION_FORMAT'],
  ['url IPv6 loopback', { url: 'http://[::1]:8080/' }, 'url', 'VALIDATION_FORMAT'],
  ['url IPv4-mapped', { url: 'http://[::ffff:10.0.0.1]/' }, 'url', 'VALIDATION_FORMAT'],
  ['url NAT64', { url: 'http://[64:ff9b::a9fe:a9fe]/' }, 'url', 'VALIDATION_FORMAT'],
  ['url 6to4', { url: 'http://[2002:c0a8:0101::1]/' }, 'url', 'VALIDATION_FORMAT'],
  ['url ULA', { url: 'http://[fd00::1]/' }, 'url', 'VALIDATION_FORMAT'],
  ['url documentation', { url: 'http://203.0.113.7/' }, 'url', 'VALIDATION_FORMAT'],
  // headers
  ['headers not an object', { headers: ['X-Foo'] }, 'headers', 'VALIDATION_TYPE'],
  ['headers null', { headers: null }, 'headers', 'VALIDATION_REQUIRED'],
  [
    'more than 50 headers',
    { headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v'])) },
    'headers',
    'VALIDATION_LENGTH',
  ],
  ['header name not a token', { headers: { 'X Foo': 'a' } }, 'headers.X Foo', 'VALIDATION_FORMAT'],
  ['header value not a string', { headers: { 'X-Foo': 1 } }, 'headers.X-Foo', 'VALIDATION_TYPE'],
  [
    'header value with CR LF',
    { headers: { 'X-Foo': 'a\r\nX-Evil: 1' } },
    'headers.X-Foo',
    'VALIDATION_FORMAT',
  ],
  ['header value with LF', { headers: { 'X-Foo': 'a\nb' } }, 'headers.X-Foo', 'VALIDATION_FORMAT'],
  ['Host header', { headers: { Host: 'example.org' } }, 'headers.Host', 'VALIDATION_FORMAT'],
  [
    'Content-Length header',
    { headers: { 'content-length': '1' } },
    'headers.content-length',
    'VALIDATION_FORMAT',
  ],
  [
    'Transfer-Encoding header',
    { headers: { 'Transfer-Encoding': 'chunked' } },
    'headers.Transfer-Encoding',
    'VALIDATION_FORMAT',
  ],
  [
    'Connection header',
    { headers: { Connection: 'close' } },
    'headers.Connection',
    'VALIDATION_FORMAT',
  ],
  [
    'same header twice',
    { headers: { 'X-A': '1', 'x-a': '2' } },
    'headers.x-a',
    'VALIDATION_UNIQUENESS',
  ],
  // redact_headers (extension)
  [
    'redact_headers not an array',
    { redact_headers: 'X-Api-Key' },
    'redact_headers',
    'VALIDATION_TYPE',
  ],
  ['redact_headers null', { redact_headers: null }, 'redact_headers', 'VALIDATION_TYPE'],
  // delivery_policy (extension)
  ['delivery_policy not an object', { delivery_policy: [] }, 'delivery_policy', 'VALIDATION_TYPE'],
  ['delivery_policy null', { delivery_policy: null }, 'delivery_policy', 'VALIDATION_TYPE'],
  [
    'an unknown delivery_policy key',
    { delivery_policy: { retries: 3 } },
    'delivery_policy.retries',
    'VALIDATION_FORMAT',
  ],
  [
    'a rate limit that is not a number',
    { delivery_policy: { rate_limit_per_second: '5' } },
    'delivery_policy.rate_limit_per_second',
    'VALIDATION_TYPE',
  ],
  [
    'a rate limit of 0',
    { delivery_policy: { rate_limit_per_second: 0 } },
    'delivery_policy.rate_limit_per_second',
    'VALIDATION_FORMAT',
  ],
  [
    'circuit_failures not an integer',
    { delivery_policy: { circuit_failures: 2.5 } },
    'delivery_policy.circuit_failures',
    'VALIDATION_FORMAT',
  ],
  [
    'a circuit cool-down under 100 ms',
    { delivery_policy: { circuit_cooldown_ms: 99 } },
    'delivery_policy.circuit_cooldown_ms',
    'VALIDATION_FORMAT',
  ],
  [
    'a negative disable_after_failing_ms',
    { delivery_policy: { disable_after_failing_ms: -1 } },
    'delivery_policy.disable_after_failing_ms',
    'VALIDATION_FORMAT',
  ],
  [
    'more than 50 redact_headers',
    { redact_headers: Array.from({ length: 51 }, (_, i) => `X-H${i}`) },
    'redact_headers',
    'VALIDATION_LENGTH',
  ],
  [
    'redact_headers name not a string',
    { redact_headers: ['X-Tenant', 7] },
    'redact_headers.1',
    'VALIDATION_TYPE',
  ],
  [
    'redact_headers name not a token',
    { redact_headers: ['X Tenant'] },
    'redact_headers.0',
    'VALIDATION_FORMAT',
  ],
  [
    'redact_headers name twice',
    { redact_headers: ['X-Tenant', 'x-tenant'] },
    'redact_headers.1',
    'VALIDATION_UNIQUENESS',
  ],
  // events
  ['events not an array', { events: {} }, 'events', 'VALIDATION_TYPE'],
  ['events null', { events: null }, 'events', 'VALIDATION_REQUIRED'],
  ['entry not an object', { events: ['item'] }, 'events.0', 'VALIDATION_TYPE'],
  [
    'entry unknown key',
    { events: item({ event_types: ['publish'], when: 1 }) },
    'events.0.when',
    'VALIDATION_FORMAT',
  ],
  [
    'entity_type missing',
    { events: [{ event_types: ['create'] }] },
    'events.0.entity_type',
    'VALIDATION_REQUIRED',
  ],
  [
    'entity_type not a string',
    { events: [{ entity_type: 1, event_types: ['create'] }] },
    'events.0.entity_type',
    'VALIDATION_TYPE',
  ],
  [
    'entity_type unknown',
    { events: [{ entity_type: 'post', event_types: ['create'] }] },
    'events.0.entity_type',
    'VALIDATION_INCLUSION',
  ],
  ['event_types missing', { events: item({}) }, 'events.0.event_types', 'VALIDATION_REQUIRED'],
  [
    'event_types not an array',
    { events: item({ event_types: 'publish' }) },
    'events.0.event_types',
    'VALIDATION_TYPE',
  ],
  [
    'event_types empty',
    { events: item({ event_types: [] }) },
    'events.0.event_types',
    'VALIDATION_LENGTH',
  ],
  [
    'event type not a string',
    { events: item({ event_types: [1] }) },
    'events.0.event_types.0',
    'VALIDATION_TYPE',
  ],
  [
    'event type of another entity type (second entry)',
    {
      events: [
        { entity_type: 'item', event_types: ['publish'] },
        { entity_type: 'item_type', event_types: ['create', 'publish'] },
      ],
    },
    'events.1.event_types.1',
    'VALIDATION_INCLUSION',
  ],
  [
    'event type duplicated',
    { events: item({ event_types: ['update', 'update'] }) },
    'events.0.event_types.1',
    'VALIDATION_UNIQUENESS',
  ],
  [
    'filter and filters together',
    { events: item({ event_types: ['publish'], filter: null, filters: [] }) },
    'events.0',
    'VALIDATION_FORMAT',
  ],
  ['filter not an object', { events: withFilter(['x']) }, 'events.0.filter', 'VALIDATION_TYPE'],
  [
    'filters not an array',
    {
      events: item({
        event_types: ['publish'],
        filters: { entity_type: 'item', entity_ids: ['1'] },
      }),
    },
    'events.0.filters',
    'VALIDATION_TYPE',
  ],
  [
    'filter entity_type missing',
    { events: withFilter({ entity_ids: ['a'] }) },
    'events.0.filter.entity_type',
    'VALIDATION_REQUIRED',
  ],
  [
    'filter entity_type unknown',
    { events: withFilter({ entity_type: 'upload', entity_ids: ['a'] }) },
    'events.0.filter.entity_type',
    'VALIDATION_INCLUSION',
  ],
  [
    'filter entity_ids missing',
    { events: withFilter({ entity_type: 'item' }) },
    'events.0.filter.entity_ids',
    'VALIDATION_REQUIRED',
  ],
  [
    'filter entity_ids empty',
    { events: withFilter({ entity_type: 'item', entity_ids: [] }) },
    'events.0.filter.entity_ids',
    'VALIDATION_LENGTH',
  ],
  [
    'filter entity_ids not an array',
    { events: withFilter({ entity_type: 'item', entity_ids: 'a' }) },
    'events.0.filter.entity_ids',
    'VALIDATION_TYPE',
  ],
  [
    'filter entity id not a string',
    { events: withFilter({ entity_type: 'item', entity_ids: ['a', 2] }) },
    'events.0.filter.entity_ids.1',
    'VALIDATION_TYPE',
  ],
  [
    'filter unknown key',
    { events: withFilter({ entity_type: 'item', entity_ids: ['a'], op: 'or' }) },
    'events.0.filter.op',
    'VALIDATION_FORMAT',
  ],
  [
    'environment_type filter value',
    { events: withFilter({ entity_type: 'environment_type', entity_ids: ['staging'] }) },
    'events.0.filter.entity_ids.0',
    'VALIDATION_INCLUSION',
  ],
  [
    'second filter of filters',
    {
      events: item({
        event_types: ['publish'],
        filters: [
          { entity_type: 'item', entity_ids: ['a'] },
          { entity_type: 'site', entity_ids: ['b'] },
        ],
      }),
    },
    'events.0.filters.1.entity_type',
    'VALIDATION_INCLUSION',
  ],
  [
    'cda_cache_tags with filters',
    {
      events: [
        {
          entity_type: 'cda_cache_tags',
          event_types: ['invalidate'],
          filters: [{ entity_type: 'item', entity_ids: ['a'] }],
        },
      ],
    },
    'events.0.filters',
    'VALIDATION_FORMAT',
  ],
  [
    'cda_cache_tags with filter',
    {
      events: [
        {
          entity_type: 'cda_cache_tags',
          event_types: ['invalidate'],
          filter: { entity_type: 'item', entity_ids: ['a'] },
        },
      ],
    },
    'events.0.filter',
    'VALIDATION_FORMAT',
  ],
  // Content keys (extension: field-aware matching), item entries only.
  ...(
    [
      [
        'changed_fields on upload',
        'upload',
        { changed_fields: ['title'] },
        'events.0.changed_fields',
        'VALIDATION_FORMAT',
      ],
      [
        'changed_fields not an array',
        'item',
        { changed_fields: 'title' },
        'events.0.changed_fields',
        'VALIDATION_TYPE',
      ],
      [
        'changed_fields empty',
        'item',
        { changed_fields: [] },
        'events.0.changed_fields',
        'VALIDATION_LENGTH',
      ],
      [
        'changed_fields not an api_key',
        'item',
        { changed_fields: ['Title'] },
        'events.0.changed_fields.0',
        'VALIDATION_FORMAT',
      ],
      [
        'changed_fields twice',
        'item',
        { changed_fields: ['a', 'a'] },
        'events.0.changed_fields.1',
        'VALIDATION_UNIQUENESS',
      ],
      [
        'locales not a locale',
        'item',
        { locales: ['en', 'english!'] },
        'events.0.locales.1',
        'VALIDATION_FORMAT',
      ],
      [
        'record_status unknown',
        'item',
        { record_status: ['live'] },
        'events.0.record_status.0',
        'VALIDATION_FORMAT',
      ],
      ['fields not an object', 'item', { fields: [] }, 'events.0.fields', 'VALIDATION_TYPE'],
      ['fields empty', 'item', { fields: {} }, 'events.0.fields', 'VALIDATION_LENGTH'],
      [
        'fields key not an api_key',
        'item',
        { fields: { 'a b': { eq: 1 } } },
        'events.0.fields.a b',
        'VALIDATION_FORMAT',
      ],
      [
        'fields without operator',
        'item',
        { fields: { views: {} } },
        'events.0.fields.views',
        'VALIDATION_TYPE',
      ],
      [
        'fields unknown operator',
        'item',
        { fields: { views: { near_to: 1 } } },
        'events.0.fields.views.near_to',
        'VALIDATION_INCLUSION',
      ],
      [
        'fields list operand',
        'item',
        { fields: { views: { in: { a: 1 } } } },
        'events.0.fields.views.in',
        'VALIDATION_FORMAT',
      ],
      [
        'fields scalar operand',
        'item',
        { fields: { views: { gt: [1] } } },
        'events.0.fields.views.gt',
        'VALIDATION_FORMAT',
      ],
      [
        'fields flag operand',
        'item',
        { fields: { views: { exists: 'yes' } } },
        'events.0.fields.views.exists',
        'VALIDATION_FORMAT',
      ],
      [
        'fields costly regex',
        'item',
        { fields: { title: { matches: '(a+)+$' } } },
        'events.0.fields.title.matches',
        'VALIDATION_FORMAT',
      ],
      [
        'fields Postgres-only regex',
        'item',
        { fields: { title: { matches: '\\mword' } } },
        'events.0.fields.title.matches',
        'VALIDATION_FORMAT',
      ],
      [
        'fields near out of range',
        'item',
        { fields: { place: { near: { latitude: 91, longitude: 0, radius: 1 } } } },
        'events.0.fields.place.near',
        'VALIDATION_FORMAT',
      ],
    ] as const
  ).map(([description, entityType, keys, field, code]): Rule => [
    description,
    { events: [{ entity_type: entityType, event_types: ['update'], ...keys }] },
    field,
    code,
  ]),
  [
    'payload_changes not a boolean',
    { payload_changes: 'yes' },
    'payload_changes',
    'VALIDATION_TYPE',
  ],
  ['trace_context not a boolean', { trace_context: 'no' }, 'trace_context', 'VALIDATION_TYPE'],
  ['trace_context null', { trace_context: null }, 'trace_context', 'VALIDATION_TYPE'],
  // Flow control (extensions)
  ['delivery_order not a string', { delivery_order: 1 }, 'delivery_order', 'VALIDATION_TYPE'],
  ['delivery_order null', { delivery_order: null }, 'delivery_order', 'VALIDATION_TYPE'],
  [
    'delivery_order unknown',
    { delivery_order: 'strict' },
    'delivery_order',
    'VALIDATION_INCLUSION',
  ],
  ['coalesce not a boolean', { coalesce: 'true' }, 'coalesce', 'VALIDATION_TYPE'],
  ['batch not an object', { batch: [250] }, 'batch', 'VALIDATION_TYPE'],
  ['batch a number', { batch: 250 }, 'batch', 'VALIDATION_TYPE'],
  [
    'batch without window_ms',
    { batch: { max_events: 5 } },
    'batch.window_ms',
    'VALIDATION_REQUIRED',
  ],
  [
    'batch.window_ms not a number',
    { batch: { window_ms: '250' } },
    'batch.window_ms',
    'VALIDATION_TYPE',
  ],
  ['batch.window_ms null', { batch: { window_ms: null } }, 'batch.window_ms', 'VALIDATION_TYPE'],
  ['batch.window_ms under 10', { batch: { window_ms: 9 } }, 'batch.window_ms', 'VALIDATION_FORMAT'],
  [
    'batch.window_ms over 10 minutes',
    { batch: { window_ms: 600_001 } },
    'batch.window_ms',
    'VALIDATION_FORMAT',
  ],
  [
    'batch.window_ms not an integer',
    { batch: { window_ms: 10.5 } },
    'batch.window_ms',
    'VALIDATION_FORMAT',
  ],
  [
    'batch.max_events 0',
    { batch: { window_ms: 100, max_events: 0 } },
    'batch.max_events',
    'VALIDATION_FORMAT',
  ],
  [
    'batch.max_events over 1000',
    { batch: { window_ms: 100, max_events: 1001 } },
    'batch.max_events',
    'VALIDATION_FORMAT',
  ],
  [
    'batch.max_events not a number',
    { batch: { window_ms: 100, max_events: '5' } },
    'batch.max_events',
    'VALIDATION_TYPE',
  ],
  [
    'an unknown batch key',
    { batch: { window_ms: 100, size: 5 } },
    'batch.size',
    'VALIDATION_FORMAT',
  ],
  [
    'delivery_order per_entity with batch',
    { delivery_order: 'per_entity', batch: { window_ms: 100 } },
    'delivery_order',
    'VALIDATION_INCLUSION',
  ],
  // custom_payload
  [
    'custom_payload not a string',
    { custom_payload: { a: 1 } },
    'custom_payload',
    'VALIDATION_TYPE',
  ],
  [
    'custom_payload over 64 KB',
    { custom_payload: 'x'.repeat(64 * 1024 + 1) },
    'custom_payload',
    'VALIDATION_LENGTH',
  ],
  [
    'custom_payload unclosed section',
    { custom_payload: '{{#entity}}{{id}}' },
    'custom_payload',
    'VALIDATION_FORMAT',
  ],
  [
    'custom_payload unclosed tag',
    { custom_payload: '{"a": "{{event_type"}' },
    'custom_payload',
    'VALIDATION_FORMAT',
  ],
  [
    'custom_payload unopened section',
    { custom_payload: 'x{{/entity}}' },
    'custom_payload',
    'VALIDATION_FORMAT',
  ],
  // basic auth
  ['http_basic_user not a string', { http_basic_user: 1 }, 'http_basic_user', 'VALIDATION_TYPE'],
  [
    'http_basic_user with a colon',
    { http_basic_user: 'a:b' },
    'http_basic_user',
    'VALIDATION_FORMAT',
  ],
  [
    'http_basic_password not a string',
    { http_basic_password: false },
    'http_basic_password',
    'VALIDATION_TYPE',
  ],
  // optional attributes
  ['enabled not a boolean', { enabled: 'true' }, 'enabled', 'VALIDATION_TYPE'],
  [
    'nested_items_in_payload not a boolean',
    { nested_items_in_payload: 1 },
    'nested_items_in_payload',
    'VALIDATION_TYPE',
  ],
  ['auto_retry not a boolean', { auto_retry: null }, 'auto_retry', 'VALIDATION_TYPE'],
  [
    'payload_api_version not a string',
    { payload_api_version: 3 },
    'payload_api_version',
    'VALIDATION_TYPE',
  ],
  [
    'payload_api_version unknown',
    { payload_api_version: '2' },
    'payload_api_version',
    'VALIDATION_INCLUSION',
  ],
];

describe('POST /webhooks validation', () => {
  it.for(RULES)(
    '%s → 422 INVALID_FIELD',
    async ([_description, given, field, code, complete], { api }) => {
      const response = await createWith(
        api,
        complete ? given : { ...testWebhookAttributes(), ...given },
      );
      expect(response.status).toBe(422);
      expect(response.body.data).toHaveLength(1);
      const [error] = response.body.data;
      expect(error!.attributes.code).toBe('INVALID_FIELD');
      expect(error!.attributes.details).toMatchObject({ field, code });
      expect(error!.attributes.details['message']).toEqual(expect.any(String));
      expect((error!.attributes.details['message'] as string).length).toBeGreaterThan(10);
    },
  );

  it.for(RULES.filter(([, , , , complete]) => !complete))(
    'PUT applies the same rule: %s',
    async ([_description, overrides, field, code], { api }) => {
      const response = await putOnNew(api, { type: 'webhook', attributes: overrides });
      expect(response.status).toBe(422);
      expect(response.body.data[0]!.attributes).toMatchObject({
        code: 'INVALID_FIELD',
        details: { field, code },
      });
    },
  );

  it('PUT checks flow control against what is stored: batch on an ordered webhook, and back', async ({
    api,
  }) => {
    const created = await createWith(api, {
      ...testWebhookAttributes(),
      delivery_order: 'per_entity',
    });
    const id = (created.body as unknown as { data: { id: string } }).data.id;
    const put = (attributes: Record<string, unknown>) =>
      send(
        api,
        'PUT',
        `/webhooks/${id}`,
        JSON.stringify({ data: { type: 'webhook', attributes } }),
      );
    const refused = await put({ batch: { window_ms: 500 } });
    expect(refused.status).toBe(422);
    expect(refused.body.data[0]!.attributes.details).toMatchObject({
      field: 'batch',
      code: 'VALIDATION_INCLUSION',
    });
    // Both changed at once go together.
    expect((await put({ delivery_order: 'any', batch: { window_ms: 500 } })).status).toBe(200);
    const back = await put({ delivery_order: 'per_entity' });
    expect(back.body.data[0]!.attributes.details).toMatchObject({ field: 'delivery_order' });
    expect((await put({ batch: null, delivery_order: 'per_entity' })).status).toBe(200);
  });

  it('a refused address names the setting that lifts the refusal', async ({ api }) => {
    const response = await createWith(api, {
      ...testWebhookAttributes(),
      url: 'http://[::ffff:10.0.0.1]/hook',
    });
    expect(response.status).toBe(422);
    expect(response.body.data[0]!.attributes.details['message']).toBe(
      'url points to a refused address: ::ffff:a00:1 is in a blocked address range: private ' +
        '(it embeds 10.0.0.1); add 10.0.0.1/32 to SSRF_ALLOW_CIDRS to allow it',
    );
  });

  it('reports several problems together', async ({ api }) => {
    const response = await createWith(api, {
      ...testWebhookAttributes(),
      name: '',
      url: 'ftp://x',
      events: [{ entity_type: 'item', event_types: ['publish', 'nope'] }],
      custom_payload: '{{#a}}',
    });
    expect(response.status).toBe(422);
    expect(
      response.body.data.map((e) => [e.attributes.details['field'], e.attributes.details['code']]),
    ).toEqual([
      ['name', 'VALIDATION_REQUIRED'],
      ['url', 'VALIDATION_FORMAT'],
      ['events.0.event_types.1', 'VALIDATION_INCLUSION'],
      ['custom_payload', 'VALIDATION_FORMAT'],
    ]);
  });

  it("gives the Mustache parser's message and position", async ({ api }) => {
    const template = '{\n  "id": "{{#entity}}{{id}}"\n}';
    const response = await createWith(api, {
      ...testWebhookAttributes(),
      custom_payload: template,
    });
    const details = response.body.data[0]!.attributes.details;
    expect(details).toMatchObject({
      field: 'custom_payload',
      code: 'VALIDATION_FORMAT',
      position: template.length,
      line: 3,
      column: 2,
    });
    expect(details['message']).toContain('Unclosed section "entity" at');
  });

  it('INVALID_ATTRIBUTES for unknown and read-only attributes', async ({ api }) => {
    const response = await createWith(api, {
      ...testWebhookAttributes(),
      colour: 'red',
      signing_secret: 'whsec_x',
    });
    expect(response.status).toBe(422);
    expect(
      response.body.data.map((e) => [e.attributes.code, e.attributes.details['field']]),
    ).toEqual([
      ['INVALID_ATTRIBUTES', 'colour'],
      ['INVALID_ATTRIBUTES', 'signing_secret'],
    ]);
  });

  it('VALIDATION_UNIQUENESS for a taken name', async ({ api }) => {
    const attributes = testWebhookAttributes();
    expect((await createWith(api, attributes)).status).toBe(201);
    const response = await createWith(api, attributes);
    expect(response.status).toBe(422);
    expect(response.body.data[0]!.attributes).toMatchObject({
      code: 'INVALID_FIELD',
      details: { field: 'name', code: 'VALIDATION_UNIQUENESS' },
    });
  });

  it.for<[string, string]>([
    ['a JSON array', '[]'],
    ['no data', '{"attributes":{}}'],
    ['data an array', '{"data":[]}'],
    ['data null', '{"data":null}'],
    ['wrong type', JSON.stringify({ data: { type: 'item', attributes: testWebhookAttributes() } })],
    ['no type', JSON.stringify({ data: { attributes: testWebhookAttributes() } })],
    [
      'an id on create',
      JSON.stringify({ data: { type: 'webhook', id: '5', attributes: testWebhookAttributes() } }),
    ],
    ['attributes an array', '{"data":{"type":"webhook","attributes":[]}}'],
    [
      'an unknown member of data',
      JSON.stringify({ data: { type: 'webhook', attributes: testWebhookAttributes(), extra: 1 } }),
    ],
    [
      'relationships',
      JSON.stringify({
        data: { type: 'webhook', attributes: testWebhookAttributes(), relationships: { role: {} } },
      }),
    ],
  ])('%s → 422 INVALID_FORMAT', async ([_description, body], { api }) => {
    const response = await send(api, 'POST', '/webhooks', body);
    expect(response.status).toBe(422);
    expect(response.body.data[0]!.attributes.code).toBe('INVALID_FORMAT');
    expect(response.body.data[0]!.attributes.details['message']).toEqual(expect.any(String));
  });

  it('PUT with a data.id other than the URL id → INVALID_FORMAT', async ({ api }) => {
    const response = await putOnNew(api, {
      type: 'webhook',
      id: '999',
      attributes: { enabled: false },
    });
    expect(response.status).toBe(422);
    expect(response.body.data[0]!.attributes.code).toBe('INVALID_FORMAT');
  });

  it('invalid JSON → 400 INVALID_JSON_BODY', async ({ api }) => {
    const response = await send(api, 'POST', '/webhooks', '{"data": {');
    expect(response.status).toBe(400);
    expect(response.body.data[0]!.attributes.code).toBe('INVALID_JSON_BODY');
  });

  it('accepts the valid edge cases', async ({ api }) => {
    for (const overrides of [
      { name: 'n'.repeat(255) },
      { name: 'emoji 😀 and 中文' },
      { url: `https://example.com/${'a'.repeat(2048 - 20)}` },
      { headers: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`X-H${i}`, 'v'])) },
      { redact_headers: Array.from({ length: 50 }, (_, i) => `X-H${i}`) },
      { redact_headers: [] },
      { delivery_policy: {} },
      {
        delivery_policy: {
          rate_limit_per_second: 0.5,
          circuit_failures: 0,
          circuit_cooldown_ms: 100,
          disable_after_failing_ms: null,
        },
      },
      { events: [] },
      { custom_payload: 'x'.repeat(64 * 1024) },
      { custom_payload: '{{=<% %>=}}{"id": "<% entity.id %>"}' },
      { url: 'http://93.184.215.14/' },
      { url: 'https://[2606:4700::1111]/hook' },
      { url: 'http://[::ffff:8.8.8.8]/' },
      { events: [{ entity_type: 'cda_cache_tags', event_types: ['invalidate'], filters: [] }] },
      { events: [{ entity_type: 'maintenance_mode', event_types: ['change'] }] },
      { events: [{ entity_type: 'sso_user', event_types: ['create'] }] },
      { events: [{ entity_type: 'upload', event_types: ['create', 'update', 'delete'] }] },
      {
        events: [
          {
            entity_type: 'build_trigger',
            event_types: ['deploy_started', 'deploy_succeeded', 'deploy_failed'],
            filter: { entity_type: 'build_trigger', entity_ids: ['12'] },
          },
        ],
      },
      { http_basic_user: 'user', http_basic_password: 'p:ss' },
      { delivery_order: 'per_entity', coalesce: true },
      { batch: null, delivery_order: 'any', coalesce: false },
      { batch: { window_ms: 10 } },
      { batch: { window_ms: 600_000, max_events: 1000 } },
      { batch: { window_ms: 100, max_events: 1 }, coalesce: true, delivery_order: 'any' },
      { batch: { window_ms: 100, max_events: null } },
    ]) {
      const response = await createWith(api, { ...testWebhookAttributes(), ...overrides });
      expect(response.status, JSON.stringify(overrides).slice(0, 200)).toBe(201);
    }
  });
});
