import {
  compileContentFilter,
  contentFilterHolds,
  entryFilters,
  type ContentFilter,
  type ItemEventContent,
  type WebhookFilterEntityType,
} from '@herald/contract';
import type { MatchableEvent, WebhookRecord } from '@herald/store';

/** One events entry of one webhook, its filters turned into sets. */
interface IndexedEntry {
  webhookId: string;
  filters: { kind: WebhookFilterEntityType; ids: ReadonlySet<string> }[];
  /** Its content keys (field-aware matching), null when it has none. */
  content: ContentFilter | null;
}

export type { MatchableEvent };

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

/** The filter kinds that narrow an entry to a few ids of the event, most selective first. */
const KEY_KINDS: readonly WebhookFilterEntityType[] = [
  'item',
  'build_trigger',
  'item_type',
  'environment',
];

/** The ids of the event a filter of this kind looks at (what the entry is keyed by). */
function eventKeys(kind: WebhookFilterEntityType, event: MatchableEvent): (string | null)[] {
  switch (kind) {
    case 'item':
      return [event.entityType === 'item' ? event.entityId : null];
    case 'build_trigger':
      return [event.entityId];
    case 'item_type':
      return [event.itemTypeId, event.itemTypeApiKey];
    case 'environment':
      return [event.environment];
    case 'environment_type':
      return [];
  }
}

/**
 * The entries of one (entity_type, event_type): those with an id filter are keyed by that
 * filter's ids (kind → id → entries), the rest (no filter, or environment_type only) are scanned.
 */
interface Bucket {
  keyed: Map<WebhookFilterEntityType, Map<string, IndexedEntry[]>>;
  scanned: IndexedEntry[];
  /** Whether an entry has content keys: matching then needs the event's content. */
  content: boolean;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * The enabled webhooks by entity_type → event_type → (filter kind → id) → entries, so that matching
 * an event costs time in proportion to the entries that could match it, not to all webhooks
 * (docs/api.md, Events and filters): an entry filtered by item, build_trigger, item_type or
 * environment ids is only looked at when the event carries one of those ids.
 */
export class WebhookIndex {
  #byType = new Map<string, Map<string, Bucket>>();
  #webhooks = new Map<string, WebhookRecord>();

  has(id: string): boolean {
    return this.#webhooks.has(id);
  }

  /** An enabled webhook as the index has it. */
  get(id: string): WebhookRecord | undefined {
    return this.#webhooks.get(id);
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
    const byType = new Map<string, Map<string, Bucket>>();
    for (const webhook of this.#webhooks.values()) {
      for (const entry of webhook.events) {
        const indexed: IndexedEntry = {
          webhookId: webhook.id,
          filters: entryFilters(entry).map((f) => ({
            kind: f.entity_type,
            ids: new Set(f.entity_ids),
          })),
          content: compileContentFilter(entry),
        };
        const key = KEY_KINDS.map((kind) => indexed.filters.find((f) => f.kind === kind)).find(
          (f) => f !== undefined,
        );
        let byEvent = byType.get(entry.entity_type);
        if (!byEvent) {
          byEvent = new Map<string, Bucket>();
          byType.set(entry.entity_type, byEvent);
        }
        for (const eventType of new Set(entry.event_types)) {
          let bucket = byEvent.get(eventType);
          if (!bucket) {
            bucket = { keyed: new Map(), scanned: [], content: false };
            byEvent.set(eventType, bucket);
          }
          if (indexed.content) bucket.content = true;
          if (!key) {
            bucket.scanned.push(indexed);
            continue;
          }
          let byId = bucket.keyed.get(key.kind);
          if (!byId) {
            byId = new Map<string, IndexedEntry[]>();
            bucket.keyed.set(key.kind, byId);
          }
          for (const id of key.ids) push(byId, id, indexed);
        }
      }
    }
    this.#byType = byType;
  }

  /**
   * Whether an entry that could match the event has content keys: then match needs the event's
   * content (describeItemEvent), which costs the event's model. Cheap: one lookup.
   */
  needsContent(event: Pick<MatchableEvent, 'entityType' | 'eventType'>): boolean {
    return this.#byType.get(event.entityType)?.get(event.eventType)?.content ?? false;
  }

  /**
   * Ids of the webhooks the event matches, each once. `content` is the event's content, needed
   * when needsContent says so: without it an entry with content keys does not match.
   */
  match(event: MatchableEvent, content?: ItemEventContent): string[] {
    const bucket = this.#byType.get(event.entityType)?.get(event.eventType);
    if (!bucket) return [];
    const matched = new Set<string>();
    const consider = (entries: readonly IndexedEntry[] | undefined): void => {
      if (!entries) return;
      for (const entry of entries) {
        if (matched.has(entry.webhookId)) continue;
        if (!entry.filters.every((f) => filterHolds(f, event))) continue;
        // Content last: the id filters are cheaper and usually decide.
        if (entry.content && !(content && contentFilterHolds(entry.content, content))) continue;
        matched.add(entry.webhookId);
      }
    };
    consider(bucket.scanned);
    for (const [kind, byId] of bucket.keyed) {
      for (const id of eventKeys(kind, event)) if (id) consider(byId.get(id));
    }
    // A notice is never sent to the webhook it is about (entity_id): that one may be failing.
    if (event.entityType === 'notice' && event.entityId) matched.delete(event.entityId);
    return [...matched];
  }
}
