import {
  CONTENT_ENTRY_KEYS,
  ENVIRONMENT_TYPES,
  RECORD_STATUSES,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_FILTER_ENTITY_TYPES,
} from '@herald/contract/tables';
import { ConditionRowEditor } from '../components/condition-row.js';
import { Check, FieldErrors, Options, TextField, TextInput } from '../components/ui.js';
import { problemsUnder, type FieldProblem } from '../lib/errors.js';
import { eventTypesOf, takesFilters } from '../lib/event-types.js';
import { POLICY_FIELDS, describeMs, type PolicyForm } from '../lib/delivery-policy.js';
import {
  newEventRow,
  noContentKeys,
  rowKey,
  type EntryCondition,
  type EventRow,
  type FilterRow,
  type HeaderRow,
} from '../lib/webhook-form.js';

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
                      ...(entity === 'item' ? {} : noContentKeys()),
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
                <CheckGroup
                  labelledBy={`ev-${row.key}-types`}
                  name={`${path}.event_types`}
                  values={available}
                  checked={row.event_types}
                  onChange={(event_types) => set(index, { event_types })}
                />
              </div>
            </div>
            <FieldErrors problems={own(problems, path, ['filters', ...CONTENT_ENTRY_KEYS])} />
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
            {row.entity_type === 'item' && (
              <ContentKeysEditor
                row={row}
                path={path}
                problems={problems}
                onChange={(patch) => set(index, patch)}
              />
            )}
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
        onClick={() => onChange([...rows, newEventRow('item', [])])}
      >
        Add events entry
      </button>
    </fieldset>
  );
}

/** Checkboxes for some of `values`; what is checked is kept in the order of `values`. */
function CheckGroup({
  labelledBy,
  name,
  values,
  checked,
  onChange,
}: {
  labelledBy: string;
  name: string;
  values: readonly string[];
  checked: readonly string[];
  onChange: (checked: string[]) => void;
}) {
  return (
    <div class="checks" role="group" aria-labelledby={labelledBy}>
      {values.map((value) => (
        <Check
          key={value}
          name={name}
          value={value}
          checked={checked.includes(value)}
          onChange={(on) =>
            onChange(
              on
                ? values.filter((v) => v === value || checked.includes(v))
                : checked.filter((v) => v !== value),
            )
          }
        >
          {value}
        </Check>
      ))}
    </div>
  );
}

/**
 * An item entry's field-aware matching (extension, docs/api.md, Events and filters): changed
 * fields, locales, record status and field conditions, each empty for no narrowing.
 */
function ContentKeysEditor({
  row,
  path,
  problems,
  onChange,
}: {
  row: EventRow;
  path: string;
  problems: readonly FieldProblem[];
  onChange: (patch: Partial<EventRow>) => void;
}) {
  const id = `ev-${row.key}`;
  // A condition's errors name its field and operator (`events.0.fields.views.gt`).
  const conditionProblems = (condition: EntryCondition) => {
    const field = `${path}.fields.${condition.field.trim()}`;
    return [
      ...problemsUnder(problems, field, { exact: true }),
      ...problemsUnder(problems, `${field}.${condition.operator}`),
    ];
  };
  const claimed = new Set(row.conditions.flatMap(conditionProblems));
  const setCondition = (index: number, patch: Partial<EntryCondition>) =>
    onChange({
      conditions: row.conditions.map((c, i) => (i === index ? { ...c, ...patch } : c)),
    });
  return (
    <div class="content-keys">
      <p class="hint">
        Only when the record's content matches (every part given must hold; leave a part empty not
        to narrow on it).
      </p>
      <div class="row-2">
        <TextField
          id={`${id}-changed-fields`}
          label="Changed fields"
          problems={problemsUnder(problems, `${path}.changed_fields`)}
          hint="Field api_keys, comma-separated: at least one of them changed."
          name={`${path}.changed_fields`}
          class="mono"
          placeholder="title, slug"
          value={row.changedFields}
          onValue={(changedFields) => onChange({ changedFields })}
        />
        <TextField
          id={`${id}-locales`}
          label="Locales"
          problems={problemsUnder(problems, `${path}.locales`)}
          hint="A localized field changed in one of these; the conditions below look at them."
          name={`${path}.locales`}
          class="mono"
          placeholder="en, it"
          value={row.locales}
          onValue={(locales) => onChange({ locales })}
        />
      </div>
      <div class="field">
        <span class="label" id={`${id}-status`}>
          Record status
        </span>
        <CheckGroup
          labelledBy={`${id}-status`}
          name={`${path}.record_status`}
          values={RECORD_STATUSES}
          checked={row.recordStatus}
          onChange={(recordStatus) => onChange({ recordStatus })}
        />
        <span class="hint">The record's status after the event; none checked: any.</span>
        <FieldErrors problems={problemsUnder(problems, `${path}.record_status`)} />
      </div>
      <div class="field" role="group" aria-labelledby={`${id}-conditions`}>
        <span class="label" id={`${id}-conditions`}>
          Field conditions
        </span>
        <span class="hint">
          Each holds on the record after the event, as the records' field filters find it.
        </span>
        {row.conditions.map((condition, index) => (
          <ConditionRowEditor
            key={condition.key}
            name={`Condition ${index + 1}`}
            row={condition}
            problems={conditionProblems(condition)}
            onChange={(patch) => setCondition(index, patch)}
            onRemove={() => onChange({ conditions: row.conditions.filter((_, i) => i !== index) })}
          />
        ))}
        <FieldErrors
          problems={problemsUnder(problems, `${path}.fields`).filter((p) => !claimed.has(p))}
        />
        <div>
          <button
            type="button"
            class="button button-small"
            onClick={() =>
              onChange({
                conditions: [
                  ...row.conditions,
                  { key: rowKey(), field: '', operator: 'eq', value: '' },
                ],
              })
            }
          >
            Add field condition
          </button>
        </div>
      </div>
    </div>
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
