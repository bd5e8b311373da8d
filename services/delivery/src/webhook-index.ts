import { entryFilters, type WebhookFilterEntityType } from '@herald/contract';
import type { StoredEvent, WebhookRecord } from '@herald/store';

/** One events entry of one webhook, its filters turned into sets. */
interface IndexedEntry {
  webhookId: string;
  filters: { kind: WebhookFilterEntityType; ids: ReadonlySet<string> }[];
}

/** What matching reads of an event (API.md §4.3). */
export type MatchableEvent = Pick<
  StoredEvent,
  | 'environment'
  | 'isEnvironmentPrimary'
  | 'entityType'
  | 'eventType'
  | 'entityId'
  | 'itemTypeId'
  | 'itemTypeApiKey'
>;

function filterHolds(filter: IndexedEntry['filters'][number], event: MatchableEvent): boolean {
  switch (filter.kind) {
    case 'item':
      return event.entityType === 'item' && !!event.entityId && filter.ids.has(event.entityId);
    case 'item_type':
      // Item events: the record's model; item_type events: the model itself (id or api_key).
      return (
        (!!event.itemTypeId && filter.ids.has(event.itemTypeId)) ||
        (!!event.itemTypeApiKey && filter.ids.has(event.itemTypeApiKey))
      );
    case 'environment':
      return filter.ids.has(event.environment);
    case 'environment_type':
      return filter.ids.has(event.isEnvironmentPrimary ? 'primary' : 'sandbox');
    case 'build_trigger':
      return !!event.entityId && filter.ids.has(event.entityId);
  }
}

/**
 * The enabled webhooks by entity_type → event_type → entries, so that matching an event costs time
 * in proportion to the entries that could match it, not to all webhooks.
 */
export class WebhookIndex {
  #byType = new Map<string, Map<string, IndexedEntry[]>>();
  #webhooks = new Map<string, WebhookRecord>();

  has(id: string): boolean {
    return this.#webhooks.has(id);
  }

  get size(): number {
    return this.#webhooks.size;
  }

  /** Replaces the whole index (periodic reload). */
  replaceAll(webhooks: readonly WebhookRecord[]): void {
    this.#webhooks = new Map(webhooks.filter((w) => w.enabled).map((w) => [w.id, w]));
    this.#rebuild();
  }

  /** Applies one webhook's new state (null: deleted). */
  upsert(id: string, webhook: WebhookRecord | null): void {
    if (webhook?.enabled) this.#webhooks.set(id, webhook);
    else if (!this.#webhooks.delete(id)) return;
    this.#rebuild();
  }

  #rebuild(): void {
    const byType = new Map<string, Map<string, IndexedEntry[]>>();
    for (const webhook of this.#webhooks.values()) {
      for (const entry of webhook.events) {
        const indexed: IndexedEntry = {
          webhookId: webhook.id,
          filters: entryFilters(entry).map((f) => ({
            kind: f.entity_type,
            ids: new Set(f.entity_ids),
          })),
        };
        let byEvent = byType.get(entry.entity_type);
        if (!byEvent) {
          byEvent = new Map<string, IndexedEntry[]>();
          byType.set(entry.entity_type, byEvent);
        }
        for (const eventType of new Set(entry.event_types)) {
          let list = byEvent.get(eventType);
          if (!list) {
            list = [];
            byEvent.set(eventType, list);
          }
          list.push(indexed);
        }
      }
    }
    this.#byType = byType;
  }

  /** Ids of the webhooks the event matches, each once. */
  match(event: MatchableEvent): string[] {
    const entries = this.#byType.get(event.entityType)?.get(event.eventType);
    if (!entries) return [];
    const matched = new Set<string>();
    for (const entry of entries) {
      if (matched.has(entry.webhookId)) continue;
      if (entry.filters.every((f) => filterHolds(f, event))) matched.add(entry.webhookId);
    }
    return [...matched];
  }
}
