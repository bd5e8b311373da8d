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

describe('webhook form', () => {
  it('round-trips a webhook, keeping the filter shape it was sent in', () => {
    const attributes = attributesFromForm(formFromWebhook(webhook));
    expect(attributes).toEqual({
      name: 'Publications',
      url: 'https://example.com/hook/{{entity_type}}',
      enabled: false,
      headers: { 'X-Foo': 'Bar' },
      redact_headers: ['X-Tenant', 'x-other'],
      events: [
        {
          entity_type: 'item',
          event_types: ['publish'],
          filter: { entity_type: 'item_type', entity_ids: ['article', 'page'] },
        },
        { entity_type: 'build_trigger', event_types: ['deploy_failed'] },
      ],
      custom_payload: '{"id":"{{entity.id}}"}',
      http_basic_user: 'user',
      http_basic_password: 'pw',
      nested_items_in_payload: true,
      auto_retry: false,
      delivery_policy: { circuit_failures: 3 },
    });
  });

  it('sends every key a create needs, null where empty', () => {
    const attributes = attributesFromForm({ ...emptyForm(), name: 'x' });
    expect(Object.keys(attributes).sort()).toEqual(
      [
        'auto_retry',
        'custom_payload',
        'delivery_policy',
        'enabled',
        'events',
        'headers',
        'http_basic_password',
        'http_basic_user',
        'name',
        'nested_items_in_payload',
        'redact_headers',
        'url',
      ].sort(),
    );
    expect(attributes['redact_headers']).toEqual([]);
    expect(attributes['custom_payload']).toBeNull();
    expect(attributes['http_basic_user']).toBeNull();
  });

  it('builds the preview attributes, with event_id only when given', () => {
    const form = formFromWebhook(webhook);
    expect(previewAttributes(form, '')).toEqual({
      url: webhook.url,
      custom_payload: webhook.custom_payload,
      headers: { 'X-Foo': 'Bar' },
      redact_headers: ['X-Tenant', 'x-other'],
      http_basic_user: 'user',
      nested_items_in_payload: true,
    });
    expect(previewAttributes(form, ' evt-1 ')['event_id']).toBe('evt-1');
  });

  it('maps a single-filter path to the first filter row', () => {
    expect(normalizeFieldPath('events.0.filter.entity_ids.1')).toBe(
      'events.0.filters.0.entity_ids.1',
    );
    expect(normalizeFieldPath('events.0.filters.2')).toBe('events.0.filters.2');
    expect(normalizeFieldPath('url')).toBe('url');
  });
});
