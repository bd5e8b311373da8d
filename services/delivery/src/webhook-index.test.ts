import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryFilters, type WebhookEventEntry } from '@herald/contract';
import type { WebhookRecord } from '@herald/store';
import { WebhookIndex, type MatchableEvent } from './webhook-index.js';

/**
 * docs/api.md (Events and filters) read literally: every entry of every enabled webhook, no index.
 */
function reference(webhooks: WebhookRecord[], event: MatchableEvent): string[] {
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
          }),
      ),
    )
    .map((w) => w.id);
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
const entry = fc.record({
  entity_type: fc.constantFrom('item', 'item_type', 'build_trigger'),
  event_types: fc.subarray(['create', 'update', 'publish', 'deploy_started'], { minLength: 1 }),
  filters: fc.array(filter, { maxLength: 3 }),
}) as fc.Arbitrary<WebhookEventEntry>;
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
        fc.array(event, { minLength: 1 }),
        (hooks, events) => {
          const webhooks = hooks.map((h, i) => ({ ...h, id: String(i + 1) }) as WebhookRecord);
          const index = new WebhookIndex();
          index.replaceAll(webhooks);
          for (const e of events) {
            expect(index.match(e).sort()).toEqual(reference(webhooks, e).sort());
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
