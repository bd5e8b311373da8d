import { SAMPLE_EVENT_ID, type WebhookCallResource } from '@herald/contract/tables';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useApp } from '../app-context.js';
import {
  BodyView,
  ErrorNote,
  HeadersTable,
  KeyValueTable,
  Loading,
  Suggestions,
  TextInput,
} from '../components/ui.js';
import { useDebounced, useResource } from '../hooks.js';
import type { Collection } from '../lib/api.js';
import { fieldProblems, type FieldProblem } from '../lib/errors.js';
import type { WebhookPreview } from '../lib/types.js';
import { normalizeFieldPath, previewAttributes, type WebhookForm } from '../lib/webhook-form.js';

/** How long typing must pause before the preview asks Herald again. */
const PREVIEW_DEBOUNCE_MS = 350;

/**
 * The request Herald would send for this form, rendered by Herald itself (POST /webhooks/preview,
 * the delivery code path) for a sample event or a recent event chosen by id. Nothing is sent.
 */
export function PreviewPanel({
  form,
  webhookId,
  onProblems,
}: {
  form: WebhookForm;
  webhookId: string | undefined;
  onProblems: (problems: FieldProblem[]) => void;
}) {
  const { client } = useApp();
  const [eventId, setEventId] = useState('');
  const attributes = useMemo(
    () => previewAttributes(form, eventId, webhookId),
    [form, eventId, webhookId],
  );
  const key = JSON.stringify(attributes);
  const debouncedKey = useDebounced(key, PREVIEW_DEBOUNCE_MS);

  const preview = useResource(
    (signal) =>
      client.post<{ data: WebhookPreview }>(
        '/webhooks/preview',
        { data: { type: 'webhook_preview', attributes: JSON.parse(debouncedKey) as unknown } },
        { signal },
      ),
    [client, debouncedKey],
  );
  const recentEvents = useResource(
    (signal) =>
      client.get<Collection<WebhookCallResource>>('/webhook_calls', {
        signal,
        query: { page: { limit: '50' }, order_by: 'created_at_desc' },
      }),
    [client],
  );
  const eventIds = [
    ...new Set(
      (recentEvents.data?.data ?? [])
        .map((call) => call.attributes['event_id'])
        // A test send's sample event is not stored: it cannot be previewed by id.
        .filter((id): id is string => typeof id === 'string' && id !== SAMPLE_EVENT_ID),
    ),
  ];

  const problems = preview.error ? fieldProblems(preview.error.entries) : [];
  useEffect(() => {
    onProblems(problems.map((p) => ({ ...p, field: normalizeFieldPath(p.field) })));
    // Only when the answer changes.
  }, [preview.error, preview.data]);

  const stale = key !== debouncedKey || preview.loading;
  const rendered = preview.data?.data.attributes;
  const eventProblem = problems.find((problem) => problem.field === 'event_id');
  return (
    <aside class="card preview" aria-labelledby="preview-title" aria-busy={stale}>
      <div class="preview-head">
        <h2 id="preview-title">Live preview</h2>
        <span class={`pill ${stale ? 'pill-busy' : 'pill-ok'}`} role="status" aria-live="polite">
          {stale ? 'Updating…' : preview.error ? 'Not valid' : 'Up to date'}
        </span>
      </div>
      <div class="field">
        <label class="label" for="preview-event">
          Event
        </label>
        <TextInput
          id="preview-event"
          list="preview-events"
          class="mono"
          placeholder="A sample item publish event"
          value={eventId}
          aria-invalid={eventProblem ? true : undefined}
          onValue={setEventId}
        />
        <Suggestions id="preview-events" values={eventIds} />
        <span class="hint">
          Leave empty for a sample, or give the id of an event Herald received.
        </span>
      </div>
      {preview.loading && !preview.data && !preview.error && <Loading label="Rendering…" />}
      {preview.error && problems.length > 0 && (
        <div class="note note-error" role="alert">
          <p>Fix these to see the request:</p>
          <ul>
            {problems.map((problem) => (
              <li key={`${problem.field}:${problem.message}`}>
                <code>{problem.field}</code>: {problem.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      {preview.error && problems.length === 0 && <ErrorNote error={preview.error} />}
      {rendered && !preview.error && (
        <div class={stale ? 'preview-body is-stale' : 'preview-body'}>
          <p class="muted small" data-testid="preview-event">
            {rendered['sample_event'] === true
              ? `A sample ${String(rendered['entity_type'])}.${String(rendered['event_type'])} event; the call id is shown as "preview".`
              : `Event ${String(rendered['event_id'])} (${String(rendered['entity_type'])}.${String(rendered['event_type'])}); the call id is shown as "preview".`}
          </p>
          <h3>URL</h3>
          <p class="mono break" data-testid="preview-url">
            POST {rendered.url}
          </p>
          <h3>Headers</h3>
          <HeadersTable headers={rendered.headers} />
          {form.payloadChanges && !form.useCustomPayload && <PatchSummary body={rendered.body} />}
          <h3>Body</h3>
          <div data-testid="preview-body">
            <BodyView body={rendered.body} label="Rendered body" />
          </div>
        </div>
      )}
    </aside>
  );
}

/**
 * The default payload's `changes` (payload_changes: a JSON Patch from the previous version's
 * attributes), one operation a row, so that its effect shows without reading through the entity.
 */
function PatchSummary({ body }: { body: string }) {
  let changes: unknown;
  try {
    changes = (JSON.parse(body) as { changes?: unknown } | null)?.changes;
  } catch {
    return null;
  }
  if (changes === undefined) return null;
  const operations = (Array.isArray(changes) ? (changes as unknown[]) : []).filter(
    (op): op is Record<string, unknown> => typeof op === 'object' && op !== null,
  );
  return (
    <>
      <h3>Changes</h3>
      <div data-testid="preview-changes">
        <KeyValueTable
          nameClass="mono"
          empty={
            changes === null ? 'null: no previous version is known for this event.' : 'No change.'
          }
          rows={operations.map(
            (op) =>
              [
                `${String(op['op'])} ${String(op['path'])}`,
                'value' in op ? <code>{JSON.stringify(op['value'])}</code> : '',
              ] as const,
          )}
        />
      </div>
    </>
  );
}
