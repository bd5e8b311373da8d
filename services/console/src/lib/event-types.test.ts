import { describe, expect, it } from 'vitest';
import {
  UNFILTERED_ENTITY_TYPES as CONTRACT_UNFILTERED,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
} from '@herald/contract';
import { EVENT_TYPES, FILTER_ENTITY_TYPES, UNFILTERED_ENTITY_TYPES } from './event-types.js';

describe("the console's copy of the event type table", () => {
  it('equals the contract (API.md §5.1, §4.2)', () => {
    expect(EVENT_TYPES).toEqual(WEBHOOK_EVENT_TYPES);
    expect([...FILTER_ENTITY_TYPES]).toEqual([...WEBHOOK_FILTER_ENTITY_TYPES]);
    expect([...UNFILTERED_ENTITY_TYPES]).toEqual([...CONTRACT_UNFILTERED]);
  });
});
