import { WEBHOOK_ENTITY_TYPES } from '@herald/contract/tables';
import { ALL_EVENT_TYPES, eventTypesOf } from '../lib/event-types.js';
import { FilterSelect, Options } from './ui.js';

/**
 * The entity type and event type filters of a list (call log, events): the event types offered
 * are the chosen entity type's, and choosing another entity type clears the event type.
 */
export function EventTypeFilters({
  entity,
  event,
  onChange,
}: {
  entity: string;
  event: string;
  onChange: (patch: { entity?: string; event: string }) => void;
}) {
  return (
    <>
      <FilterSelect
        label="Entity type"
        name="entity_type"
        value={entity}
        any="Any entity"
        onChange={(next) => onChange({ entity: next, event: '' })}
      >
        <Options values={WEBHOOK_ENTITY_TYPES} />
      </FilterSelect>
      <FilterSelect
        label="Event type"
        name="event_type"
        value={event}
        any="Any event"
        onChange={(next) => onChange({ event: next })}
      >
        <Options values={entity ? eventTypesOf(entity) : ALL_EVENT_TYPES} />
      </FilterSelect>
    </>
  );
}
