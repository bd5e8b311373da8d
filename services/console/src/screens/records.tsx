import { useEffect, useRef, useState } from 'preact/hooks';
import { navigate, useApp } from '../app-context.js';
import {
  Badge,
  Empty,
  Field,
  LoadState,
  Options,
  Pager,
  Suggestions,
  TableHead,
  TextInput,
  formatTime,
  Screen,
  type ValueFieldProps,
  FilterForm,
} from '../components/ui.js';
import { ConditionRowEditor } from '../components/condition-row.js';
import { useResource } from '../hooks.js';
import type { Collection } from '../lib/api.js';
import type { ConditionRow } from '../lib/field-conditions.js';
import { recordsParams, type RecordsQuery } from '../lib/records-query.js';
import { formatRoute } from '../lib/route.js';
import type { Item } from '../lib/types.js';
import { rowKey } from '../lib/webhook-form.js';

const PAGE_SIZES = [10, 30, 100];
/** Orderings the Order field suggests (any other is typed). */
const ORDERINGS = [
  '_updated_at_DESC',
  '_updated_at_ASC',
  '_created_at_DESC',
  '_created_at_ASC',
  '_published_at_DESC',
  'id_ASC',
  '_rank_DESC',
];

function readQuery(params: URLSearchParams): RecordsQuery {
  let filters: ConditionRow[] = [];
  try {
    const parsed = JSON.parse(params.get('fields') ?? '[]') as unknown;
    if (Array.isArray(parsed)) {
      filters = parsed
        .filter((row): row is [string, string, string] => Array.isArray(row) && row.length === 3)
        .map(([field, operator, value]) => ({ key: rowKey(), field, operator, value }));
    }
  } catch {
    filters = [];
  }
  const limit = Number(params.get('limit') ?? 30);
  return {
    model: params.get('model') ?? '',
    text: params.get('q') ?? '',
    locale: params.get('locale') ?? '',
    version: params.get('version') === 'current' ? 'current' : 'published',
    orderBy: params.get('order') ?? '',
    filters,
    offset: Math.max(0, Number(params.get('offset') ?? 0) || 0),
    limit: PAGE_SIZES.includes(limit) ? limit : 30,
  };
}

function queryRoute(query: RecordsQuery): string {
  const rows = query.filters
    .filter((row) => row.field.trim() !== '')
    .map((row) => [row.field.trim(), row.operator, row.value]);
  return formatRoute(['records'], {
    model: query.model.trim(),
    q: query.text.trim(),
    locale: query.locale.trim(),
    version: query.version === 'current' ? 'current' : '',
    order: query.orderBy,
    fields: rows.length ? JSON.stringify(rows) : '',
    offset: query.offset ? String(query.offset) : '',
    limit: query.limit !== 30 ? String(query.limit) : '',
  });
}

/** A line of text that tells records apart: their first few short string attributes. */
function summary(item: Item, locale: string): string {
  const parts: string[] = [];
  for (const value of Object.values(item.attributes)) {
    let text: unknown = value;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const localized = value as Record<string, unknown>;
      text = localized[locale] ?? Object.values(localized)[0];
    }
    if (typeof text === 'string' && text.trim() && text.length < 200) parts.push(text.trim());
    if (parts.length === 2) break;
  }
  return parts.join(' · ');
}

/** A text filter with suggestions (`list`: the datalist's id and its values). */
function SuggestedField({
  list: [listId, values],
  placeholder,
  ...field
}: ValueFieldProps & { list: readonly [string, readonly string[]]; placeholder: string }) {
  return (
    <Field label={field.label}>
      <TextInput
        name={field.name}
        list={listId}
        placeholder={placeholder}
        value={field.value}
        onValue={field.onValue}
      />
      <Suggestions id={listId} values={values} />
    </Field>
  );
}

export function Records({ params }: { params: URLSearchParams }) {
  const { client } = useApp();
  const applied = readQuery(params);
  const key = params.toString();
  const [draft, setDraft] = useState<RecordsQuery>(applied);
  // The hash changed (applied, back button, a link): the form shows what is applied. Reset
  // empties the form at once; the hash change it causes must not then overwrite what was typed
  // since.
  const resetKey = useRef<string | null>(null);
  useEffect(() => {
    if (resetKey.current === key) {
      resetKey.current = null;
      return;
    }
    setDraft(readQuery(params));
  }, [key]);
  const reset = () => {
    if (key !== '') resetKey.current = '';
    setDraft(readQuery(new URLSearchParams()));
    navigate('#/records');
  };

  const items = useResource(
    (signal) => client.get<Collection<Item>>('/items', { signal, query: recordsParams(applied) }),
    [client, key],
  );
  // The API lists no models: offer the ones seen in answers so far.
  const [models, setModels] = useState<string[]>([]);
  useEffect(() => {
    const seen = new Set(models);
    for (const item of items.data?.data ?? []) {
      const model = item.relationships?.item_type?.data?.id;
      if (model) seen.add(model);
    }
    if (seen.size !== models.length) setModels([...seen].sort());
  }, [items.data]);

  const apply = (patch: Partial<RecordsQuery> = {}) =>
    navigate(queryRoute({ ...draft, offset: 0, ...patch }));
  const setRow = (index: number, patch: Partial<ConditionRow>) =>
    setDraft({
      ...draft,
      filters: draft.filters.map((row, i) => (i === index ? { ...row, ...patch } : row)),
    });

  const list = items.data?.data ?? [];
  const total = items.data?.meta?.total_count ?? list.length;
  return (
    <Screen id="records" title="Records">
      <FilterForm label="Find records" onSubmit={() => apply()}>
        <SuggestedField
          label="Model"
          name="model"
          list={['records-models', models]}
          placeholder="api_key or id"
          value={draft.model}
          onValue={(model) => setDraft({ ...draft, model })}
        />
        <Field label="Search" grow>
          <TextInput
            name="q"
            type="search"
            placeholder="Full-text search"
            value={draft.text}
            onValue={(text) => setDraft({ ...draft, text })}
          />
        </Field>
        <Field label="Locale">
          <TextInput
            name="locale"
            size={6}
            placeholder="main"
            value={draft.locale}
            onValue={(locale) => setDraft({ ...draft, locale })}
          />
        </Field>
        <Field label="Version">
          <select
            name="version"
            value={draft.version}
            onChange={(e) => apply({ version: e.currentTarget.value as RecordsQuery['version'] })}
          >
            <option value="published">Published</option>
            <option value="current">Current (latest)</option>
          </select>
        </Field>
        <SuggestedField
          label="Order"
          name="order_by"
          list={['records-orderings', ORDERINGS]}
          placeholder="default"
          value={draft.orderBy}
          onValue={(orderBy) => setDraft({ ...draft, orderBy })}
        />
        <Field label="Per page">
          <select
            name="limit"
            value={String(draft.limit)}
            onChange={(e) => apply({ limit: Number(e.currentTarget.value) })}
          >
            <Options values={PAGE_SIZES.map(String)} />
          </select>
        </Field>
        <fieldset class="group field-filters">
          <legend>Field filters</legend>
          {draft.filters.length === 0 && (
            <p class="hint">Field filters need exactly one model above.</p>
          )}
          {draft.filters.map((row, index) => (
            <ConditionRowEditor
              key={row.key}
              name={`Filter ${index + 1}`}
              row={row}
              onChange={(patch) => setRow(index, patch)}
              onRemove={() =>
                setDraft({ ...draft, filters: draft.filters.filter((_, i) => i !== index) })
              }
            />
          ))}
          <button
            type="button"
            class="button button-small"
            onClick={() =>
              setDraft({
                ...draft,
                filters: [
                  ...draft.filters,
                  { key: rowKey(), field: '', operator: 'eq', value: '' },
                ],
              })
            }
          >
            Add field filter
          </button>
        </fieldset>
        <div class="actions">
          <button type="submit" class="button button-primary">
            Apply
          </button>
          <button type="button" class="button button-quiet" onClick={reset}>
            Reset
          </button>
        </div>
      </FilterForm>

      <LoadState resource={items} label="Loading records…" />
      {items.data && list.length === 0 && !items.error && (
        <Empty>
          <p>No records match.</p>
          <p class="muted">
            {applied.version === 'published'
              ? 'Only published records are listed; switch Version to Current to see drafts.'
              : 'Records arrive as item events (POST /events).'}
          </p>
        </Empty>
      )}
      {list.length > 0 && !items.error && (
        <table class="table table-cards" aria-label="Records" aria-busy={items.loading}>
          <TableHead columns={['Record', 'Model', 'Status', 'Updated']} />
          <tbody>
            {list.map((item) => (
              <tr key={item.id} data-item-id={item.id}>
                <td data-label="Record">
                  <a
                    class="strong mono"
                    href={formatRoute(['records', item.id], {
                      version: applied.version === 'current' ? 'current' : '',
                    })}
                  >
                    {item.id}
                  </a>
                  <div class="muted small truncate">{summary(item, applied.locale)}</div>
                </td>
                <td data-label="Model" class="mono">
                  {item.relationships?.item_type?.data?.id ?? '—'}
                </td>
                <td data-label="Status">
                  {item.meta?.status ? <Badge status={item.meta.status} /> : '—'}
                </td>
                <td data-label="Updated">{formatTime(item.meta?.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {!items.error && (
        <Pager
          offset={applied.offset}
          limit={applied.limit}
          total={total}
          onChange={(offset) => navigate(queryRoute({ ...applied, offset }))}
        />
      )}
    </Screen>
  );
}
