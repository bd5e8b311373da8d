import { navigate, useApp } from '../app-context.js';
import { Badge, CopyButton, ErrorNote, Loading, formatTime } from '../components/ui.js';
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
    return (
      <table class="kv nested">
        <tbody>
          {Object.entries(value as Record<string, unknown>).map(([key, child]) => (
            <tr key={key}>
              <th scope="row">{key}</th>
              <td>
                <ValueView value={child} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    );
  }
  if (value === null) return <span class="muted">null</span>;
  if (typeof value === 'string') return <span class="value-string">{value}</span>;
  return <code>{JSON.stringify(value)}</code>;
}

function AttributesView({ attributes }: { attributes: Record<string, unknown> }) {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return <p class="muted">No fields.</p>;
  return (
    <table class="kv">
      <tbody>
        {entries.map(([field, value]) => (
          <tr key={field}>
            <th scope="row" class="mono">
              {field}
            </th>
            <td>
              <ValueView value={value} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
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
      {item.error && <ErrorNote error={item.error} onRetry={() => item.reload()} />}
      {item.loading && !data && <Loading label="Loading the record…" />}
      {data && (
        <>
          <dl class="facts card">
            <div>
              <dt>Model</dt>
              <dd class="mono">{data.relationships?.item_type?.data?.id ?? '—'}</dd>
            </div>
            <div>
              <dt>Status</dt>
              <dd>{data.meta?.status ? <Badge status={data.meta.status} /> : '—'}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatTime(data.meta?.updated_at)}</dd>
            </div>
            <div>
              <dt>Published</dt>
              <dd>{formatTime(data.meta?.published_at)}</dd>
            </div>
            <div>
              <dt>Version</dt>
              <dd class="mono">{data.meta?.current_version ?? '—'}</dd>
            </div>
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
