import {
  SAMPLE_EVENT_ID,
  type LoggedEventResource,
  type WebhookCallResource,
} from '@herald/contract/tables';
import type { ComponentChildren } from 'preact';
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
import { DESTINATION_PLACES, HEADER_TITLES, isDestinationKind } from '../lib/destination.js';
import { PREVIEW_FLOW_EVENTS, previewEventIds } from '../lib/flow-control.js';
import type { WebhookPreview } from '../lib/types.js';
import type { Destination, DestinationKind } from '@herald/contract/tables';
import { normalizeFieldPath, previewAttributes, type WebhookForm } from '../lib/webhook-form.js';

/** How long typing must pause before the preview asks Herald again. */
const PREVIEW_DEBOUNCE_MS = 350;

/** How many recent events the flow control preview chooses from. */
const RECENT_EVENTS = 20;

/**
 * The request Herald would send for this form, rendered by Herald itself (POST /webhooks/preview,
 * the delivery code path) for a sample event or a recent event chosen by id; with flow control,
 * for the call that would carry several recent events (of one entity, when one is given): a
 * coalesced call or a batch. Nothing is sent.
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
  // Flow control: the entity whose recent events the call carries (empty: any recent events).
  const flowOn = form.flow.batch || form.flow.coalesce;
  const [entityId, setEntityId] = useState('');
  const entity = useDebounced(entityId.trim(), PREVIEW_DEBOUNCE_MS);
  const flowEvents = useResource(
    (signal) =>
      flowOn
        ? client.get<Collection<LoggedEventResource>>('/events', {
            signal,
            query: {
              filter: { entity_id: entity || undefined },
              page: { limit: String(RECENT_EVENTS) },
            },
          })
        : Promise.resolve(null),
    [client, flowOn, entity],
  );
  const recent = flowEvents.data?.data ?? [];
  const carried = flowOn ? previewEventIds(form.flow, recent) : [];
  const attributes = useMemo(
    // The single event input is hidden under flow control: what it held does not count then.
    () => previewAttributes(form, flowOn ? '' : eventId, webhookId, carried),
    [form, flowOn, eventId, webhookId, carried.join(',')],
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
  const carriedProblem = problems.find((problem) => problem.field.startsWith('event_ids'));
  return (
    <aside class="card preview" aria-labelledby="preview-title" aria-busy={stale}>
      <div class="preview-head">
        <h2 id="preview-title">Live preview</h2>
        <span class={`pill ${stale ? 'pill-busy' : 'pill-ok'}`} role="status" aria-live="polite">
          {stale ? 'Updating…' : preview.error ? 'Not valid' : 'Up to date'}
        </span>
      </div>
      {flowOn ? (
        <ChoiceInput
          id="preview-entity"
          label="Entity"
          placeholder="Any: the most recent events"
          value={entityId}
          invalid={carriedProblem !== undefined}
          onValue={setEntityId}
          suggestions={[...new Set(recent.flatMap((e) => e.attributes.entity_id ?? []))]}
        >
          The preview renders the one call that would carry up to {PREVIEW_FLOW_EVENTS} recent
          events {entity ? 'of this entity' : '(give a record id to follow one record)'}
          {form.flow.batch ? ', as a batch' : ', coalesced'}; the sample event when there are none.
        </ChoiceInput>
      ) : (
        <ChoiceInput
          id="preview-event"
          label="Event"
          placeholder="A sample item publish event"
          value={eventId}
          invalid={eventProblem !== undefined}
          onValue={setEventId}
          suggestions={eventIds}
        >
          Leave empty for a sample, or give the id of an event Herald received.
        </ChoiceInput>
      )}
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
            {describeRendered(rendered)} The call id is shown as "preview".
          </p>
          <Target rendered={rendered} />
          <h3>{HEADER_TITLES[kindOf(rendered)]}</h3>
          <div data-testid="preview-headers">
            <HeadersTable headers={rendered.headers} />
          </div>
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

/** The destination the preview answered (HTTP when it names none). */
function destinationOf(rendered: WebhookPreview['attributes']): Destination {
  const destination = rendered['destination'] as Destination | undefined;
  return destination && isDestinationKind(destination.kind) ? destination : { kind: 'http' };
}

const kindOf = (rendered: WebhookPreview['attributes']): DestinationKind =>
  destinationOf(rendered).kind;

/**
 * Where the call goes: the URL of an HTTP request, or for a broker, the broker and where on it
 * the message is published (exchange and routing key, subject, topic, stream), as the call log
 * will say it.
 */
function Target({ rendered }: { rendered: WebhookPreview['attributes'] }) {
  const destination = destinationOf(rendered);
  if (destination.kind === 'http') {
    return (
      <>
        <h3>URL</h3>
        <p class="mono break" data-testid="preview-url">
          POST {rendered.url}
        </p>
      </>
    );
  }
  const where: [string, string][] = [['Broker', destination.url]];
  switch (destination.kind) {
    case 'rabbitmq':
      where.push(['Exchange', destination.exchange], ['Routing key', destination.routing_key]);
      break;
    case 'nats':
      where.push(
        ['Subject', destination.subject],
        ['Acknowledged by', destination.jetstream ? 'JetStream (PubAck)' : 'none (core NATS)'],
      );
      break;
    case 'mqtt':
      where.push(['Topic', destination.topic], ['QoS', '1 (PUBACK)']);
      break;
    case 'redis_stream':
      where.push(['Stream', destination.stream], ['MAXLEN ~', String(destination.max_len)]);
      break;
  }
  return (
    <>
      <h3>Published to</h3>
      <p class="small muted">
        Sent as {DESTINATION_PLACES[destination.kind]}, not an HTTP request; the call log will say:
      </p>
      <p class="mono break" data-testid="preview-url">
        {rendered.url}
      </p>
      <div data-testid="preview-target">
        <KeyValueTable
          rows={where.map(
            ([name, value]) => [name, <code>{value === '' ? '""' : value}</code>] as const,
          )}
        />
      </div>
    </>
  );
}

/** What the preview renders for: an id typed or picked among suggestions, with its hint. */
function ChoiceInput({
  id,
  label,
  placeholder,
  value,
  invalid,
  onValue,
  suggestions,
  children,
}: {
  id: string;
  label: string;
  placeholder: string;
  value: string;
  invalid: boolean;
  onValue: (value: string) => void;
  suggestions: readonly string[];
  children: ComponentChildren;
}) {
  return (
    <div class="field">
      <label class="label" for={id}>
        {label}
      </label>
      <TextInput
        id={id}
        list={`${id}-suggestions`}
        class="mono"
        placeholder={placeholder}
        value={value}
        aria-invalid={invalid ? true : undefined}
        onValue={onValue}
      />
      <Suggestions id={`${id}-suggestions`} values={suggestions} />
      <span class="hint">{children}</span>
    </div>
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

/** What the preview rendered: one event, a coalesced call, or a batch, in a sentence. */
function describeRendered(rendered: WebhookPreview['attributes']): string {
  const kind = `${String(rendered['entity_type'])}.${String(rendered['event_type'])}`;
  const ids = Array.isArray(rendered['event_ids']) ? (rendered['event_ids'] as string[]) : [];
  const entries = typeof rendered['batch_entries'] === 'number' ? rendered['batch_entries'] : null;
  const events = ids.length === 1 ? '1 event' : `${ids.length} events`;
  if (entries !== null) {
    const size = entries === 1 ? '1 entry' : `${entries} entries`;
    return rendered['sample_event'] === true
      ? `A batch of the sample ${kind} event alone.`
      : `A batch of ${size} carrying ${events} (${ids.join(', ')}); the top-level keys are its last entry's (${kind}).`;
  }
  if (rendered['sample_event'] === true) return `A sample ${kind} event.`;
  if (ids.length > 1)
    return `${events} of one entity (${ids.join(', ')}), coalesced into one ${kind}.`;
  return `Event ${String(rendered['event_id'])} (${kind}).`;
}
