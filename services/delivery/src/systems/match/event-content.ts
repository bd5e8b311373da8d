import { describeItemEvent, type ItemEventContent } from '@herald/contract';
import type { StoredEvent } from '@herald/store';
import type { ModelCache } from '../../shared/loaders.js';
import type { MatchableEvent, WebhookIndex } from './webhook-index.js';

/**
 * Matching with content (field-aware matching, docs/api.md, Events and filters): an event whose
 * (entity type, event type) has entries with content keys is described first (what changed,
 * its status, its model's fields); the others match as before, at no extra cost.
 */

/** The event's content for the index, or undefined when no entry that could match needs it. */
export async function contentFor(
  index: WebhookIndex,
  models: ModelCache,
  event: MatchableEvent & StoredEvent,
): Promise<ItemEventContent | undefined> {
  if (!index.needsContent(event)) return undefined;
  const model = event.itemTypeId
    ? (await models.forEvent(event)(event.environment, [event.itemTypeId])).get(event.itemTypeId)
    : undefined;
  return describeItemEvent(
    {
      entity: event.entity,
      previousEntity: event.previousEntity,
      previousAttributes: event.previousAttributes ?? null,
      recordStatus: event.recordStatus ?? null,
    },
    model?.fields ?? [],
  );
}
