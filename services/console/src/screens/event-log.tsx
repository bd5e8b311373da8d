import type { LoggedEventResource } from '@herald/contract/tables';
import { useEffect, useRef, useState } from 'preact/hooks';
import { navigate, useApp } from '../app-context.js';
import { EventTypeFilters } from '../components/event-type-filters.js';
import {
  Empty,
  Field,
  LoadState,
  Pager,
  TableHead,
  TextInput,
  formatTime,
  Screen,
  FilterForm,
} from '../components/ui.js';
import { useResource } from '../hooks.js';
import type { Collection } from '../lib/api.js';
import type { QueryValue } from '../lib/query.js';
import { formatRoute } from '../lib/route.js';

const PAGE_SIZE = 30;

/** The event log's filters, kept in the URL's hash so that a record's history can be linked. */
interface Filters {
  entityId: string;
  entity: string;
  event: string;
  offset: number;
}

function readFilters(params: URLSearchParams): Filters {
  return {
    entityId: params.get('entity_id') ?? '',
    entity: params.get('entity') ?? '',
    event: params.get('event') ?? '',
    offset: Math.max(0, Number(params.get('offset') ?? 0) || 0),
  };
}

function eventsQuery(filters: Filters): Record<string, QueryValue> {
  return {
    filter: {
      entity_id: filters.entityId || undefined,
      entity_type: filters.entity || undefined,
      event_type: filters.event || undefined,
    },
    page: { offset: String(filters.offset), limit: String(PAGE_SIZE) },
  };
}

/** GET /events, newest first: type a record's id to see what happened to it. */
export function EventLog({ params }: { params: URLSearchParams }) {
  const { client } = useApp();
  const filters = readFilters(params);
  const key = params.toString();
  // The id as typed; it filters once submitted (one request per search, not per keystroke).
  const [typed, setTyped] = useState(filters.entityId);
  // Follows the address when it changes (back, forward), not on mount: an effect that runs late
  // would wipe what was typed meanwhile.
  const shown = useRef(filters.entityId);
  useEffect(() => {
    if (shown.current === filters.entityId) return;
    shown.current = filters.entityId;
    setTyped(filters.entityId);
  }, [filters.entityId]);

  const events = useResource(
    (signal) =>
      client.get<Collection<LoggedEventResource>>('/events', {
        signal,
        query: eventsQuery(filters),
      }),
    [client, key],
  );

  const setFilter = (patch: Partial<Filters>) => {
    const next: Filters = { ...filters, offset: 0, ...patch };
    navigate(
      formatRoute(['events'], {
        entity_id: next.entityId,
        entity: next.entity,
        event: next.event,
        offset: next.offset ? String(next.offset) : '',
      }),
    );
  };
  const list = events.data?.data ?? [];
  const total = events.data?.meta?.total_count ?? list.length;
  const filtered = filters.entityId !== '' || filters.entity !== '' || filters.event !== '';

  return (
    <Screen id="events" title="Events">
      <FilterForm label="Find events" onSubmit={() => setFilter({ entityId: typed.trim() })}>
        <Field label="Entity id" grow>
          <TextInput
            name="entity_id"
            value={typed}
            placeholder="A record's id, an upload's…"
            onValue={setTyped}
          />
        </Field>
        <EventTypeFilters entity={filters.entity} event={filters.event} onChange={setFilter} />
        <button type="submit" class="button button-primary">
          Find
        </button>
        {filtered && (
          <button
            type="button"
            class="button button-quiet"
            onClick={() => {
              setTyped('');
              navigate('#/events');
            }}
          >
            Clear filters
          </button>
        )}
      </FilterForm>

      <LoadState resource={events} label="Loading events…" />
      {events.data && list.length === 0 && (
        <Empty>
          <p>{filtered ? 'No events match these filters.' : 'No events yet.'}</p>
          <p class="muted">Producers send events with POST /events.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <table class="table table-cards" aria-label="Events">
          <TableHead columns={['Event', 'Type', 'Entity', 'Environment', 'Occurred', 'Matched']} />
          <tbody>
            {list.map((event) => (
              <tr key={event.id} data-event-id={event.id}>
                <td data-label="Event">
                  <a class="strong mono break" href={formatRoute(['events', event.id])}>
                    {event.id}
                  </a>
                </td>
                <td data-label="Type">
                  <span class="mono">
                    {event.attributes.entity_type}.{event.attributes.event_type}
                  </span>
                </td>
                <td data-label="Entity" class="mono break">
                  {event.attributes.entity_id ?? '—'}
                </td>
                <td data-label="Environment">{event.attributes.environment}</td>
                <td data-label="Occurred">{formatTime(event.attributes.occurred_at)}</td>
                <td data-label="Matched">
                  {event.attributes.matched_at
                    ? formatTime(event.attributes.matched_at)
                    : 'Not yet'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager
        offset={filters.offset}
        limit={PAGE_SIZE}
        total={total}
        onChange={(offset) => setFilter({ offset })}
      />
    </Screen>
  );
}
