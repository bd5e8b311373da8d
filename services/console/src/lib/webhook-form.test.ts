import { describe, expect, it } from 'vitest';
import type { WebhookAttributes } from './types.js';
import {
  attributesFromForm,
  emptyForm,
  formFromWebhook,
  normalizeFieldPath,
  previewAttributes,
} from './webhook-form.js';

const webhook: WebhookAttributes = {
  name: 'Publications',
  url: 'https://example.com/hook/{{entity_type}}',
  enabled: false,
  headers: { 'X-Foo': 'Bar' },
  events: [
    {
      entity_type: 'item',
      event_types: ['publish'],
      filter: { entity_type: 'item_type', entity_ids: ['article', 'page'] },
    },
    { entity_type: 'build_trigger', event_types: ['deploy_failed'] },
  ],
  http_basic_user: 'user',
  http_basic_password: 'pw',
  custom_payload: '{"id":"{{entity.id}}"}',
  payload_api_version: '3',
  nested_items_in_payload: true,
  auto_retry: false,
  redact_headers: ['X-Tenant', 'x-other'],
  delivery_policy: { circuit_failures: 3, rate_limit_per_second: null },
};

/** How `webhook` is delivered: no flow control, to its URL over HTTP, no auth or TLS of its own. */
const PLAIN_DELIVERY = {
  delivery_order: 'any',
  coalesce: false,
  batch: null,
  destination: { kind: 'http' },
  auth: null,
  tls: null,
};

describe('webhook form', () => {
  it('round-trips a webhook, keeping the filter shape it was sent in', () => {
    const attributes = attributesFromForm(formFromWebhook(webhook));
    expect(attributes).toEqual({
      name: 'Publications',
      url: 'https://example.com/hook/{{entity_type}}',
      enabled: false,
      headers: { 'X-Foo': 'Bar' },
      redact_headers: ['X-Tenant', 'x-other'],
      // As sent: the item filter keeps its entity_type/entity_ids shape.
      events: webhook.events,
      custom_payload: '{"id":"{{entity.id}}"}',
      http_basic_user: 'user',
      http_basic_password: 'pw',
      nested_items_in_payload: true,
      payload_changes: false,
      auto_retry: false,
      delivery_policy: { circuit_failures: 3 },
      ...PLAIN_DELIVERY,
    });
    const flow = {
      delivery_order: 'per_entity',
      coalesce: true,
      batch: { window_ms: 500, max_events: 9 },
    };
    expect(attributesFromForm(formFromWebhook({ ...webhook, ...flow }))).toMatchObject(flow);
  });

  const contentEntry = {
    entity_type: 'item',
    event_types: ['update', 'publish'],
    changed_fields: ['title', 'slug'],
    locales: ['it'],
    record_status: ['published'],
    fields: {
      views: { gte: 100, lt: '5000' },
      title: { matches: { pattern: '^breaking', case_sensitive: false } },
      tags: { any_in: ['a', 'b'] },
    },
  };

  it('round-trips content keys and payload_changes exactly while untouched', () => {
    const attributes = attributesFromForm(
      formFromWebhook({
        ...webhook,
        payload_changes: true,
        events: [contentEntry, { ...webhook.events[0]!, locales: null, fields: null }],
      }),
    );
    expect(attributes['payload_changes']).toBe(true);
    expect(attributes['events']).toEqual([
      contentEntry,
      { ...webhook.events[0]!, locales: null, fields: null },
    ]);
  });

  it('sends edited content keys, leaving out empty ones and nulling emptied ones', () => {
    const form = formFromWebhook({ ...webhook, events: [contentEntry] });
    const entry = form.events[0]!;
    expect(entry.conditions.map((c) => [c.field, c.operator, c.value])).toEqual([
      ['views', 'gte', '100'],
      ['views', 'lt', '5000'],
      ['title', 'matches', '{"pattern":"^breaking","case_sensitive":false}'],
      ['tags', 'any_in', 'a, b'],
    ]);
    const edited = {
      ...entry,
      changedFields: 'title,\nbody ',
      locales: '',
      recordStatus: [],
      conditions: [
        { ...entry.conditions[0]!, value: '200' },
        { ...entry.conditions[1]!, operator: 'lte' },
        { ...entry.conditions[3]!, value: 'a, c' },
        { key: 99, field: 'title', operator: 'matches', value: '^Hot' },
        // A new row left blank is no condition.
        { key: 100, field: '', operator: 'eq', value: '' },
      ],
    };
    expect(attributesFromForm({ ...form, events: [edited] })['events']).toEqual([
      {
        entity_type: 'item',
        event_types: ['update', 'publish'],
        changed_fields: ['title', 'body'],
        locales: null,
        record_status: null,
        fields: {
          views: { gte: '200', lte: '5000' },
          tags: { any_in: ['a', 'c'] },
          title: { matches: { pattern: '^Hot' } },
        },
      },
    ]);
    // A new entry sends no content key it was not given.
    const fresh = attributesFromForm(emptyForm())['events'] as Record<string, unknown>[];
    expect(Object.keys(fresh[0]!).sort()).toEqual(['entity_type', 'event_types']);
    const typed = {
      ...emptyForm().events[0]!,
      recordStatus: ['draft', 'published'],
      conditions: [{ key: 1, field: 'views', operator: 'exists', value: 'true' }],
    };
    expect(attributesFromForm({ ...emptyForm(), events: [typed] })['events']).toEqual([
      {
        entity_type: 'item',
        event_types: ['publish', 'unpublish'],
        record_status: ['draft', 'published'],
        fields: { views: { exists: 'true' } },
      },
    ]);
  });

  it('sends every key a create needs, null where empty', () => {
    const attributes = attributesFromForm({ ...emptyForm(), name: 'x' });
    expect(Object.keys(attributes).sort()).toEqual(
      [
        'auto_retry',
        'batch',
        'coalesce',
        'custom_payload',
        'delivery_order',
        'delivery_policy',
        'destination',
        'enabled',
        'events',
        'headers',
        'http_basic_password',
        'http_basic_user',
        'auth',
        'tls',
        'name',
        'nested_items_in_payload',
        'payload_changes',
        'redact_headers',
        'url',
      ].sort(),
    );
    expect(attributes['redact_headers']).toEqual([]);
    expect(attributes['custom_payload']).toBeNull();
    expect(attributes['http_basic_user']).toBeNull();
  });

  it('builds the preview attributes, with event_id or event_ids only when given', () => {
    const form = formFromWebhook(webhook);
    expect(previewAttributes(form, '')).toEqual({
      url: webhook.url,
      custom_payload: webhook.custom_payload,
      headers: { 'X-Foo': 'Bar' },
      redact_headers: ['X-Tenant', 'x-other'],
      http_basic_user: 'user',
      nested_items_in_payload: true,
      payload_changes: false,
      ...PLAIN_DELIVERY,
    });
    expect(previewAttributes(form, ' evt-1 ')['event_id']).toBe('evt-1');
    // The events of one call (flow control) take the place of the one event.
    const carried = previewAttributes(form, 'evt-1', undefined, ['evt-2', 'evt-3']);
    expect(carried['event_ids']).toEqual(['evt-2', 'evt-3']);
    expect(carried).not.toHaveProperty('event_id');
    expect(previewAttributes({ ...form, payloadChanges: true }, '')['payload_changes']).toBe(true);
  });

  it('maps a single-filter path to the first filter row', () => {
    expect(normalizeFieldPath('events.0.filter.entity_ids.1')).toBe(
      'events.0.filters.0.entity_ids.1',
    );
    expect(normalizeFieldPath('events.0.filters.2')).toBe('events.0.filters.2');
    expect(normalizeFieldPath('url')).toBe('url');
  });
});
