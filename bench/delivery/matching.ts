/** Matching one event against 10,000 webhooks in the in-memory index (µs per event). */
import type { WebhookEventEntry } from '@herald/contract';
import { WebhookIndex, type MatchableEvent } from '@herald/delivery';
import type { WebhookRecord } from '@herald/store';

export const MATCH_WEBHOOKS = 10_000;
const MATCH_EVENTS = 100_000;

// ---------------------------------------------------------------------------------------------

export function matchingBench(): { usPerEvent: number; matchesPerEvent: number } {
  const webhooks: WebhookRecord[] = [];
  for (let n = 0; n < MATCH_WEBHOOKS; n++) {
    let events: WebhookEventEntry[];
    if (n % 20 === 0) {
      // specific records
      events = [
        {
          entity_type: 'item',
          event_types: ['create', 'update', 'delete'],
          filters: [{ entity_type: 'item', entity_ids: [`rec-${n}`, `rec-${n + 1}`] }],
        },
      ];
    } else if (n % 20 === 1) {
      events = [{ entity_type: 'item_type', event_types: ['create', 'update', 'delete'] }];
    } else {
      events = [
        {
          entity_type: 'item',
          event_types: ['publish', 'unpublish', 'update'],
          filters: [
            { entity_type: 'item_type', entity_ids: [`model-${n % 500}`, `m${n % 500}`] },
            ...(n % 3 === 0
              ? [{ entity_type: 'environment_type' as const, entity_ids: ['primary'] }]
              : []),
          ],
        },
      ];
    }
    webhooks.push({ id: String(n + 1), enabled: true, events } as WebhookRecord);
  }
  const index = new WebhookIndex();
  index.replaceAll(webhooks);
  const events: MatchableEvent[] = Array.from({ length: 1000 }, (_, i) => ({
    environment: 'main',
    isEnvironmentPrimary: i % 4 !== 0,
    entityType: 'item',
    eventType: i % 2 === 0 ? 'publish' : 'update',
    entityId: `rec-${(i * 37) % MATCH_WEBHOOKS}`,
    itemTypeId: `model-${(i * 7) % 500}`,
    itemTypeApiKey: `m${(i * 7) % 500}`,
  }));
  let matches = 0;
  for (let i = 0; i < 20_000; i++) matches += index.match(events[i % events.length]!).length; // warm
  matches = 0;
  const started = performance.now();
  for (let i = 0; i < MATCH_EVENTS; i++) matches += index.match(events[i % events.length]!).length;
  const elapsed = performance.now() - started;
  return { usPerEvent: (elapsed * 1000) / MATCH_EVENTS, matchesPerEvent: matches / MATCH_EVENTS };
}

if (process.argv[1]?.endsWith('matching.js')) {
  const { usPerEvent, matchesPerEvent } = matchingBench();
  process.stdout.write(
    `${usPerEvent.toFixed(2)} µs/event, ${matchesPerEvent.toFixed(1)} matches/event\n`,
  );
}
