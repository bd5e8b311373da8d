import { navigate, useApp } from '../app-context.js';
import { Badge, CopyButton, Fact, KeyValueTable, LoadState, formatTime } from '../components/ui.js';
import { useResource } from '../hooks.js';
import { formatRoute } from '../lib/route.js';
import type { Item } from '../lib/types.js';

const isBlock = (value: unknown): value is Item =>
  typeof value === 'object' &&
  value !== null &&
  (value as { type?: unknown }).type === 'item' &&
  typeof (value as { id?: unknown }).id === 'string';

/** A value of the record, with blocks (expanded by nested=true) shown as nested cards. */
function ValueView({ value }: { value: unknown }) {
  if (isBlock(value)) {
    return (
      <details class="block" open>
        <summary>
          Block <span class="mono">{value.id}</span>{' '}
          <span class="muted small">({value.relationships?.item_type?.data?.id ?? 'block'})</span>
        </summary>
        <AttributesView attributes={value.attributes} />
      </details>
    );
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">[]</span>;
    return (
      <ol class="values">
        {(value as unknown[]).map((element, index) => (
          <li key={index}>
            <ValueView value={element} />
          </li>
        ))}
      </ol>
    );
  }
  if (value !== null && typeof value === 'object') {
    return <KeyValueTable rows={valueRows(value as Record<string, unknown>)} nested />;
  }
  if (value === null) return <span class="muted">null</span>;
  if (typeof value === 'string') return <span class="value-string">{value}</span>;
  return <code>{JSON.stringify(value)}</code>;
}

const valueRows = (object: Record<string, unknown>) =>
  Object.entries(object).map(([key, value]) => [key, <ValueView value={value} />] as const);

function AttributesView({ attributes }: { attributes: Record<string, unknown> }) {
  return <KeyValueTable rows={valueRows(attributes)} empty="No fields." nameClass="mono" />;
}

export function RecordDetail({ id, params }: { id: string; params: URLSearchParams }) {
  const { client } = useApp();
  const version = params.get('version') === 'current' ? 'current' : 'published';
  const item = useResource(
    (signal) =>
      client.get<{ data: Item }>(`/items/${encodeURIComponent(id)}`, {
        signal,
        query: { nested: 'true', version },
      }),
    [client, id, version],
  );
  const data = item.data?.data;
  return (
    <section aria-labelledby="record-title">
      <p class="crumbs">
        <a
          href="#/records"
          onClick={(e) => {
            if (history.length > 1) {
              e.preventDefault();
              history.back();
            }
          }}
        >
          ← Records
        </a>
      </p>
      <div class="page-head">
        <h1 id="record-title" class="mono">
          {id}
        </h1>
        <label class="field-inline">
          <span class="label-inline">Version</span>
          <select
            value={version}
            onChange={(e) =>
              navigate(
                formatRoute(['records', id], {
                  version: e.currentTarget.value === 'current' ? 'current' : '',
                }),
              )
            }
          >
            <option value="published">Published</option>
            <option value="current">Current</option>
          </select>
        </label>
      </div>
      <LoadState resource={item} label="Loading the record…" />
      {data && (
        <>
          <dl class="facts card">
            <Fact term="Model" mono>
              {data.relationships?.item_type?.data?.id ?? '—'}
            </Fact>
            <Fact term="Status">
              {data.meta?.status ? <Badge status={data.meta.status} /> : '—'}
            </Fact>
            <Fact term="Updated">{formatTime(data.meta?.updated_at)}</Fact>
            <Fact term="Published">{formatTime(data.meta?.published_at)}</Fact>
            <Fact term="Version" mono>
              {data.meta?.current_version ?? '—'}
            </Fact>
          </dl>
          <div class="card">
            <div class="page-head">
              <h2>Fields</h2>
              <CopyButton text={JSON.stringify(data, null, 2)} label="Copy JSON" />
            </div>
            <AttributesView attributes={data.attributes} />
          </div>
        </>
      )}
    </section>
  );
}
