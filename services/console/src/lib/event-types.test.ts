import { describe, expect, it } from 'vitest';
import { WEBHOOK_ENTITY_TYPES, WEBHOOK_EVENT_TYPES } from '@herald/contract/tables';
import { ALL_EVENT_TYPES, eventTypesOf, takesFilters } from './event-types.js';

describe("the console's reading of the contract's event type table (docs/api.md, Events and filters)", () => {
  it('gives an entity type its event types, and an unknown one (a prototype key too) none', () => {
    for (const entity of WEBHOOK_ENTITY_TYPES) {
      expect(eventTypesOf(entity)).toEqual(WEBHOOK_EVENT_TYPES[entity]);
    }
    expect(eventTypesOf('')).toEqual([]);
    expect(eventTypesOf('toString')).toEqual([]);
  });

  it('lists every event type once, sorted, for the call log', () => {
    expect(ALL_EVENT_TYPES).toEqual([
      'bulk_job_finished',
      'change',
      'circuit_opened',
      'create',
      'delete',
      'deploy_failed',
      'deploy_started',
      'deploy_succeeded',
      'disabled',
      'failing',
      'invalidate',
      'promote',
      'publish',
      'recovered',
      'unpublish',
      'update',
    ]);
  });

  it('offers filters to every entity type but cda_cache_tags and notice', () => {
    expect(WEBHOOK_ENTITY_TYPES.filter((entity) => !takesFilters(entity))).toEqual([
      'cda_cache_tags',
      'notice',
    ]);
  });
});
