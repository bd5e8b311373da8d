/**
 * API.md §5.1: each entity type and its event types, and the filter kinds of §4.2. A copy of
 * @herald/contract's table (the console bundles no server code); a test keeps the two equal.
 */
export const EVENT_TYPES: Readonly<Record<string, readonly string[]>> = {
  item: ['create', 'update', 'delete', 'publish', 'unpublish'],
  item_type: ['create', 'update', 'delete'],
  upload: ['create', 'update', 'delete'],
  build_trigger: ['deploy_started', 'deploy_succeeded', 'deploy_failed'],
  environment: ['create', 'update', 'promote', 'delete'],
  maintenance_mode: ['change'],
  sso_user: ['create'],
  cda_cache_tags: ['invalidate'],
};

export const ENTITY_TYPES = Object.keys(EVENT_TYPES);

/** Every event type of any entity type, once, for the call log's filter. */
export const ALL_EVENT_TYPES = [...new Set(Object.values(EVENT_TYPES).flat())].sort();

export const FILTER_ENTITY_TYPES = [
  'item_type',
  'item',
  'build_trigger',
  'environment',
  'environment_type',
] as const;

export const UNFILTERED_ENTITY_TYPES: readonly string[] = ['cda_cache_tags'];

export const CALL_STATUSES = ['pending', 'success', 'failed', 'rescheduled'] as const;
