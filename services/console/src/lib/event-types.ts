import {
  UNFILTERED_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  isWebhookEntityType,
} from '@herald/contract/tables';

/** The event types of an entity type as a form holds it (any string): none for an unknown one. */
export function eventTypesOf(entityType: string): readonly string[] {
  return isWebhookEntityType(entityType) ? WEBHOOK_EVENT_TYPES[entityType] : [];
}

/** Every event type of any entity type, once, for the call log's filter. */
export const ALL_EVENT_TYPES = [...new Set(Object.values(WEBHOOK_EVENT_TYPES).flat())].sort();

/**
 * Whether a webhook entry for this entity type may carry filters (docs/api.md, Events and filters).
 */
export function takesFilters(entityType: string): boolean {
  return !(UNFILTERED_ENTITY_TYPES as readonly string[]).includes(entityType);
}
