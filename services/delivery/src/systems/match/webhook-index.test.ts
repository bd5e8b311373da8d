import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileContentFilter,
  contentFilterHolds,
  describeItemEvent,
  entryFilters,
  type ItemEventContent,
  type WebhookEventEntry,
} from '@herald/contract';
import type { WebhookRecord } from '@herald/store';
import { WebhookIndex, type MatchableEvent } from './webhook-index.js';

/**
 * docs/api.md (Events and filters) read literally: every entry of every enabled webhook, no index.
 */
function reference(
  webhooks: WebhookRecord[],
  event: MatchableEvent,
  content?: ItemEventContent,
): string[] {
  return webhooks
    .filter((w) => w.enabled)
    .filter((w) =>
      w.events.some(
        (entry) =>
          entry.entity_type === event.entityType &&
          entry.event_types.includes(event.eventType) &&
          entryFilters(entry).every((f) => {
            const ids: string[] = f.entity_ids;
            switch (f.entity_type) {
              case 'item':
                return event.entityType === 'item' && ids.includes(event.entityId ?? '');
              case 'item_type':
                return (
                  ids.includes(event.itemTypeId ?? '\0') ||
                  ids.includes(event.itemTypeApiKey ?? '\0')
                );
              case 'environment':
                return ids.includes(event.environment);
              case 'environment_type':
                return ids.includes(event.isEnvironmentPrimary ? 'primary' : 'sandbox');
              case 'build_trigger':
                return ids.includes(event.entityId ?? '\0');
            }
          }) &&
          // Content keys, entry by entry (webhook-content.test.ts holds their meaning).
          contentHolds(entry, content),
      ),
    )
    .map((w) => w.id);
}

function contentHolds(entry: WebhookEventEntry, content: ItemEventContent | undefined): boolean {
  const filter = compileContentFilter(entry);
  return !filter || (content !== undefined && contentFilterHolds(filter, content));
}

const id = fc.constantFrom('a', 'b', 'c', 'main', 'sandbox-1', 'primary', 'sandbox');
const filter = fc.record({
  entity_type: fc.constantFrom(
    'item',
    'item_type',
    'environment',
    'environment_type',
    'build_trigger',
  ),
  entity_ids: fc.array(id, { minLength: 1, maxLength: 3 }),
});
const FIELDS = [
  { apiKey: 'title', fieldType: 'string', localized: true },
  { apiKey: 'views', fieldType: 'integer', localized: false },
];
const attributes = fc.record(
  {
    title: fc.dictionary(fc.constantFrom('en', 'it'), fc.constantFrom('a', 'b')),
    views: fc.integer({ min: 0, max: 3 }),
  },
  { requiredKeys: [] },
);
const contentKeys = fc.record(
  {
    changed_fields: fc.subarray(['title', 'views', 'slug'], { minLength: 1 }),
    locales: fc.subarray(['en', 'it'], { minLength: 1 }),
    record_status: fc.subarray(['draft', 'updated', 'published'] as const, { minLength: 1 }),
    fields: fc.constantFrom(
      { views: { gt: 1 } },
      { title: { eq: 'a' } },
      { views: { exists: false } },
      { title: { in: 'a,b' }, views: { lte: 2 } },
    ),
  },
  { requiredKeys: [] },
);
const entry = fc
  .record({
    entity_type: fc.constantFrom('item', 'item_type', 'build_trigger'),
    event_types: fc.subarray(['create', 'update', 'publish', 'deploy_started'], { minLength: 1 }),
    filters: fc.array(filter, { maxLength: 3 }),
    content: fc.option(contentKeys, { nil: undefined }),
  })
  .map(({ content, ...rest }) =>
    rest.entity_type === 'item' && content ? { ...rest, ...content } : rest,
  ) as fc.Arbitrary<WebhookEventEntry>;
const itemContent: fc.Arbitrary<ItemEventContent> = fc
  .record({
    next: attributes,
    previous: fc.option(attributes, { nil: null }),
    status: fc.constantFrom('draft', 'updated', 'published', null),
  })
  .map(({ next, previous, status }) =>
    describeItemEvent(
      {
        entity: { attributes: next },
        previousEntity: null,
        previousAttributes: previous,
        recordStatus: status,
      },
      FIELDS,
    ),
  );
const webhook = fc.record({
  enabled: fc.boolean(),
  events: fc.array(entry, { minLength: 1, maxLength: 3 }),
});
const event: fc.Arbitrary<MatchableEvent> = fc.record({
  environment: fc.constantFrom('main', 'sandbox-1'),
  isEnvironmentPrimary: fc.boolean(),
  entityType: fc.constantFrom('item', 'item_type', 'build_trigger'),
  eventType: fc.constantFrom('create', 'update', 'publish', 'deploy_started'),
  entityId: fc.option(id, { nil: null }),
  itemTypeId: fc.option(id, { nil: null }),
  itemTypeApiKey: fc.option(id, { nil: null }),
});

describe('WebhookIndex', () => {
  it('matches exactly what docs/api.md (Events and filters) says, for any webhooks and event', () => {
    fc.assert(
      fc.property(
        fc.array(webhook, { maxLength: 12 }),
        fc.array(fc.tuple(event, itemContent), { minLength: 1 }),
        (hooks, events) => {
          const webhooks = hooks.map((h, i) => ({ ...h, id: String(i + 1) }) as WebhookRecord);
          const index = new WebhookIndex();
          index.replaceAll(webhooks);
          for (const [e, content] of events) {
            // needsContent says when content is needed: without it, what matches is the same.
            const given = index.needsContent(e) ? content : undefined;
            expect(index.match(e, given).sort()).toEqual(reference(webhooks, e, content).sort());
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('with 10,000 webhooks, finds the ten filtered on the event model', () => {
    const webhooks = Array.from(
      { length: 10_000 },
      (_, n) =>
        ({
          id: String(n + 1),
          enabled: true,
          events: [
            {
              entity_type: 'item',
              event_types: ['update'],
              filters: [{ entity_type: 'item_type', entity_ids: [`model-${n % 1000}`] }],
            },
          ],
        }) as WebhookRecord,
    );
    const index = new WebhookIndex();
    index.replaceAll(webhooks);
    const matched = index.match({
      environment: 'main',
      isEnvironmentPrimary: true,
      entityType: 'item',
      eventType: 'update',
      entityId: 'r1',
      itemTypeId: 'model-7',
      itemTypeApiKey: 'post',
    });
    expect(matched.sort()).toEqual(
      ['1008', '2008', '3008', '4008', '5008', '6008', '7008', '8008', '9008', '8'].sort(),
    );
  });
});
