import { entityKey, inProducerOrder, isCoalescable, type StoredEvent } from '@herald/store';

/**
 * What a call of a webhook with flow control sends, from the events it carries (docs/api.md,
 * Flow control): one event, or several of one entity merged into one (coalescing), or a batch's
 * entries. The payload is built from `event`; a batch's also lists `entries` (its `events`).
 */
export interface CallContent {
  event: StoredEvent;
  /** A batch's entries, in the producer's order (null: not a batch). */
  entries: StoredEvent[] | null;
}

/**
 * Several events of one entity as one, the latest state: the newest event, named `delete` when
 * it is one, else `create` when the first was a create (a create followed by updates arrives as
 * a create); its previous version is the one before the first event.
 */
export function mergeEvents(events: readonly StoredEvent[]): StoredEvent {
  const ordered = inProducerOrder(events);
  const first = ordered[0];
  const last = ordered[ordered.length - 1];
  if (!first || !last) throw new Error('mergeEvents needs at least one event');
  if (ordered.length === 1) return first;
  const eventType =
    last.eventType === 'delete'
      ? 'delete'
      : first.eventType === 'create'
        ? 'create'
        : last.eventType;
  return {
    ...last,
    eventType,
    previousEntity: first.previousEntity,
    previousAttributes: first.previousAttributes ?? null,
  };
}

/**
 * The content of a call carrying `events`: with `batch`, one entry per event, or per entity when
 * the webhook coalesces (entries in the order of their latest event); otherwise the events merged
 * (a coalesced call) or the one event.
 */
export function callContent(
  webhook: { coalesceEvents: boolean; batch: unknown },
  events: readonly StoredEvent[],
): CallContent {
  const ordered = inProducerOrder(events);
  if (webhook.batch === null) return { event: mergeEvents(ordered), entries: null };
  const groups: StoredEvent[][] = [];
  const byEntity = new Map<string, StoredEvent[]>();
  for (const event of ordered) {
    if (!webhook.coalesceEvents || !isCoalescable(event)) {
      groups.push([event]);
      continue;
    }
    const key = entityKey(event);
    const group = byEntity.get(key);
    if (group) {
      group.push(event);
      // The entry moves to its latest event's place.
      groups.splice(groups.indexOf(group), 1);
      groups.push(group);
    } else {
      const created = [event];
      byEntity.set(key, created);
      groups.push(created);
    }
  }
  const entries = groups.map(mergeEvents);
  return { event: entries[entries.length - 1]!, entries };
}
