import {
  ENVIRONMENT_TYPES,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
} from '@herald/contract/tables';
import { Check, FieldErrors, Options, TextField, TextInput } from '../components/ui.js';
import { problemsUnder, type FieldProblem } from '../lib/errors.js';
import { eventTypesOf, takesFilters } from '../lib/event-types.js';
import { POLICY_FIELDS, describeMs, type PolicyForm } from '../lib/delivery-policy.js';
import { rowKey, type EventRow, type FilterRow, type HeaderRow } from '../lib/webhook-form.js';

/** Errors about `path` itself and its children, except those under the given sub-paths. */
function own(problems: readonly FieldProblem[], path: string, except: string[] = []) {
  return problemsUnder(problems, path).filter(
    (problem) =>
      !except.some(
        (sub) => problem.field === `${path}.${sub}` || problem.field.startsWith(`${path}.${sub}.`),
      ),
  );
}

export function EventsEditor({
  rows,
  problems,
  onChange,
}: {
  rows: EventRow[];
  problems: readonly FieldProblem[];
  onChange: (rows: EventRow[]) => void;
}) {
  const set = (index: number, patch: Partial<EventRow>) =>
    onChange(rows.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <fieldset class="group" aria-describedby="events-errors">
      <legend>Events</legend>
      <p class="hint">The webhook receives an event when any of these entries matches it.</p>
      {rows.map((row, index) => {
        const path = `events.${index}`;
        const available = eventTypesOf(row.entity_type);
        const filterable = takesFilters(row.entity_type);
        return (
          <div class="subcard" key={row.key} data-events-index={index}>
            <div class="row-2">
              <div class="field">
                <label class="label" for={`ev-${row.key}-entity`}>
                  Entity type
                </label>
                <select
                  id={`ev-${row.key}-entity`}
                  value={row.entity_type}
                  aria-invalid={
                    problemsUnder(problems, `${path}.entity_type`).length > 0 ? true : undefined
                  }
                  onChange={(e) => {
                    const entity = e.currentTarget.value;
                    const allowed = eventTypesOf(entity);
                    set(index, {
                      entity_type: entity,
                      event_types: row.event_types.filter((type) => allowed.includes(type)),
                      filters: takesFilters(entity) ? row.filters : [],
                    });
                  }}
                >
                  <Options values={WEBHOOK_ENTITY_TYPES} />
                </select>
              </div>
              <div class="field">
                <span class="label" id={`ev-${row.key}-types`}>
                  Event types
                </span>
                <div class="checks" role="group" aria-labelledby={`ev-${row.key}-types`}>
                  {available.map((type) => (
                    <Check
                      key={type}
                      name={`events.${index}.event_types`}
                      value={type}
                      checked={row.event_types.includes(type)}
                      onChange={(checked) =>
                        set(index, {
                          event_types: checked
                            ? available.filter((t) => t === type || row.event_types.includes(t))
                            : row.event_types.filter((t) => t !== type),
                        })
                      }
                    >
                      {type}
                    </Check>
                  ))}
                </div>
              </div>
            </div>
            <FieldErrors problems={own(problems, path, ['filters'])} />
            {filterable &&
              row.filters.map((filter, filterIndex) => (
                <FilterEditor
                  key={filter.key}
                  filter={filter}
                  path={`${path}.filters.${filterIndex}`}
                  problems={problems}
                  onChange={(next) =>
                    set(index, {
                      filters: row.filters.map((f, i) => (i === filterIndex ? next : f)),
                    })
                  }
                  onRemove={() =>
                    set(index, { filters: row.filters.filter((_, i) => i !== filterIndex) })
                  }
                />
              ))}
            <FieldErrors problems={problemsUnder(problems, `${path}.filters`, { exact: true })} />
            <div class="actions">
              {filterable && (
                <button
                  type="button"
                  class="button button-small"
                  onClick={() =>
                    set(index, {
                      filters: [
                        ...row.filters,
                        { key: rowKey(), entity_type: 'item_type', ids: '' },
                      ],
                    })
                  }
                >
                  Add filter
                </button>
              )}
              <button
                type="button"
                class="button button-small button-quiet"
                onClick={() => onChange(rows.filter((_, i) => i !== index))}
              >
                Remove entry
              </button>
            </div>
          </div>
        );
      })}
      <FieldErrors
        id="events-errors"
        problems={problemsUnder(problems, 'events', { exact: true })}
      />
      <button
        type="button"
        class="button button-small"
        onClick={() =>
          onChange([
            ...rows,
            { key: rowKey(), entity_type: 'item', event_types: [], filters: [], shape: 'filters' },
          ])
        }
      >
        Add events entry
      </button>
    </fieldset>
  );
}

function FilterEditor({
  filter,
  path,
  problems,
  onChange,
  onRemove,
}: {
  filter: FilterRow;
  path: string;
  problems: readonly FieldProblem[];
  onChange: (filter: FilterRow) => void;
  onRemove: () => void;
}) {
  const mine = problemsUnder(problems, path);
  return (
    <div class="filter-row">
      <label>
        <span class="label-inline">Only when</span>
        <select
          value={filter.entity_type}
          onChange={(e) => onChange({ ...filter, entity_type: e.currentTarget.value })}
        >
          <Options values={WEBHOOK_FILTER_ENTITY_TYPES} />
        </select>
      </label>
      <label class="grow">
        <span class="label-inline">is one of</span>
        <TextInput
          value={filter.ids}
          placeholder={
            filter.entity_type === 'environment_type'
              ? ENVIRONMENT_TYPES.join(', ')
              : 'ids, comma-separated'
          }
          aria-invalid={mine.length > 0 ? true : undefined}
          onValue={(ids) => onChange({ ...filter, ids })}
        />
      </label>
      <button type="button" class="button button-small button-quiet" onClick={onRemove}>
        Remove
      </button>
      <FieldErrors problems={mine} />
    </div>
  );
}

export function HeadersEditor({
  rows,
  redacted,
  problems,
  onChange,
  onRedactedChange,
}: {
  rows: HeaderRow[];
  /** `redact_headers` as typed: names, comma- or newline-separated. */
  redacted: string;
  problems: readonly FieldProblem[];
  onChange: (rows: HeaderRow[]) => void;
  onRedactedChange: (redacted: string) => void;
}) {
  const set = (index: number, patch: Partial<HeaderRow>) =>
    onChange(rows.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <fieldset class="group">
      <legend>Headers</legend>
      {rows.length === 0 && <p class="hint">No custom headers.</p>}
      {rows.map((row, index) => {
        const mine = row.name.trim() ? problemsUnder(problems, `headers.${row.name.trim()}`) : [];
        return (
          <div class="header-row" key={row.key}>
            <TextInput
              aria-label={`Header ${index + 1} name`}
              class="mono"
              placeholder="X-Header"
              value={row.name}
              aria-invalid={mine.length > 0 ? true : undefined}
              onValue={(name) => set(index, { name })}
            />
            <TextInput
              aria-label={`Header ${index + 1} value`}
              class="mono grow"
              placeholder="value"
              value={row.value}
              onValue={(value) => set(index, { value })}
            />
            <button
              type="button"
              class="button button-small button-quiet"
              aria-label={`Remove header ${row.name || index + 1}`}
              onClick={() => onChange(rows.filter((_, i) => i !== index))}
            >
              Remove
            </button>
            <FieldErrors problems={mine} />
          </div>
        );
      })}
      <FieldErrors problems={problemsUnder(problems, 'headers', { exact: true })} />
      <button
        type="button"
        class="button button-small"
        onClick={() => onChange([...rows, { key: rowKey(), name: '', value: '' }])}
      >
        Add header
      </button>
      <TextField
        id="wh-redact-headers"
        label="Hide in the call log"
        problems={problemsUnder(problems, 'redact_headers')}
        hint={
          <>
            Header names, comma-separated, whose values the call log and the preview show as{' '}
            <code>***</code> (the receiver still gets them). Authorization, cookies and names with
            token, secret, key, auth, session, password or signature are always hidden.
          </>
        }
        name="redact_headers"
        class="mono"
        placeholder="X-Tenant, X-Signing-Hint"
        value={redacted}
        onValue={onRedactedChange}
      />
    </fieldset>
  );
}

/** `delivery_policy`: the endpoint health settings, each empty for the deployment's default. */
export function PolicyFields({
  policy,
  problems,
  onChange,
}: {
  policy: PolicyForm;
  problems: readonly FieldProblem[];
  onChange: (policy: PolicyForm) => void;
}) {
  return (
    <fieldset class="group">
      <legend>Endpoint health</legend>
      <p class="hint">
        A rate limit, the circuit breaker and when to give up on an endpoint that keeps failing.
        Leave a field empty for the deployment's default.
      </p>
      <div class="row-2">
        {POLICY_FIELDS.map((field) => (
          <TextField
            key={field.key}
            id={`wh-policy-${field.key}`}
            label={field.label}
            problems={problemsUnder(problems, `delivery_policy.${field.key}`)}
            hint={
              <>
                {field.hint}
                {field.ms && describeMs(policy[field.key]) && (
                  <strong> {describeMs(policy[field.key])}</strong>
                )}
              </>
            }
            name={`delivery_policy.${field.key}`}
            inputMode={field.integer ? 'numeric' : 'decimal'}
            placeholder="default"
            value={policy[field.key]}
            onValue={(value) => onChange({ ...policy, [field.key]: value })}
          />
        ))}
      </div>
      <FieldErrors problems={problemsUnder(problems, 'delivery_policy', { exact: true })} />
    </fieldset>
  );
}
