import { WEBHOOK_CALL_STATUSES, type WebhookCallResource } from '@herald/contract/tables';
import { useState } from 'preact/hooks';
import { navigate, useApp } from '../app-context.js';
import { EventTypeFilters } from '../components/event-type-filters.js';
import {
  Badge,
  Check,
  ConfirmDialog,
  Empty,
  ErrorNote,
  Field,
  FilterSelect,
  LoadState,
  Options,
  Pager,
  TableHead,
  formatTime,
  Screen,
  type ValueFieldProps,
  CallRow,
  FilterForm,
} from '../components/ui.js';
import { WEBHOOK_CHOICES, useInterval, useResource, useWebhookChoices } from '../hooks.js';
import { asFailure, type ApiFailure, type Collection } from '../lib/api.js';
import { parsePace, resendFilter, toInstant, type CallFilters } from '../lib/bulk.js';
import type { QueryValue } from '../lib/query.js';
import type { Webhook } from '../lib/types.js';
import { formatRoute } from '../lib/route.js';
import { PaceField, startBulkJob } from './bulk-jobs.js';

const PAGE_SIZE = 30;
const REFRESH_MS = 5000;

/** The call log's filters, kept in the URL's hash so a filtered view can be linked. */
interface Filters extends CallFilters {
  offset: number;
}

function readFilters(params: URLSearchParams): Filters {
  return {
    webhook: params.get('webhook') ?? '',
    status: params.get('status') ?? '',
    entity: params.get('entity') ?? '',
    event: params.get('event') ?? '',
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
    offset: Math.max(0, Number(params.get('offset') ?? 0) || 0),
  };
}

function callsQuery(filters: Filters): Record<string, QueryValue> {
  const fields: Record<string, Record<string, QueryValue>> = {};
  if (filters.webhook) fields['webhook_id'] = { eq: filters.webhook };
  if (filters.status) fields['status'] = { eq: filters.status };
  if (filters.entity) fields['entity_type'] = { eq: filters.entity };
  if (filters.event) fields['event_type'] = { eq: filters.event };
  const from = toInstant(filters.from);
  const to = toInstant(filters.to);
  if (from || to) fields['created_at'] = { gt: from, lt: to };
  return {
    filter: { fields },
    order_by: 'created_at_desc',
    page: { offset: String(filters.offset), limit: String(PAGE_SIZE) },
  };
}

export function CallLog({ params }: { params: URLSearchParams }) {
  const { client } = useApp();
  const filters = readFilters(params);
  const [live, setLive] = useState(true);
  const key = params.toString();

  // The picker offers a page of webhooks (a deployment may have thousands); the table names
  // each call's webhook from the list's `included`.
  const webhooks = useWebhookChoices(client);
  const calls = useResource(
    (signal) =>
      client.get<Collection<WebhookCallResource> & { included?: Webhook[] }>('/webhook_calls', {
        signal,
        query: callsQuery(filters),
      }),
    [client, key],
  );
  useInterval(() => calls.reload(true), REFRESH_MS, live);

  const setFilter = (patch: Partial<Filters>) => {
    const next: Filters = { ...filters, offset: 0, ...patch };
    navigate(
      formatRoute(['calls'], {
        webhook: next.webhook,
        status: next.status,
        entity: next.entity,
        event: next.event,
        from: next.from,
        to: next.to,
        offset: next.offset ? String(next.offset) : '',
      }),
    );
  };
  const choices = webhooks.data?.data ?? [];
  const names = new Map(
    [...choices, ...(calls.data?.included ?? [])].map((w) => [w.id, w.attributes.name]),
  );
  const moreWebhooks = (webhooks.data?.meta?.total_count ?? 0) > WEBHOOK_CHOICES;
  const list = calls.data?.data ?? [];
  const total = calls.data?.meta?.total_count ?? list.length;
  const filtered = Object.entries(filters).some(([k, v]) => k !== 'offset' && v !== '');
  const [resending, setResending] = useState(false);

  return (
    <Screen
      id="calls"
      title="Call log"
      actions={
        <Check checked={live} onChange={setLive}>
          Refresh every {REFRESH_MS / 1000} s
        </Check>
      }
    >
      <FilterForm label="Filter calls">
        <FilterSelect
          label="Webhook"
          name="webhook"
          value={filters.webhook}
          any="All webhooks"
          onChange={(webhook) => setFilter({ webhook })}
        >
          {choices.map((webhook) => (
            <option key={webhook.id} value={webhook.id}>
              {webhook.attributes.name}
            </option>
          ))}
          {/* A webhook chosen from its own page may lie beyond the first page of choices. */}
          {filters.webhook && !choices.some((w) => w.id === filters.webhook) ? (
            <option value={filters.webhook}>
              {names.get(filters.webhook) ?? `Webhook #${filters.webhook}`}
            </option>
          ) : null}
          {moreWebhooks ? (
            <option disabled value="">
              {`… the first ${WEBHOOK_CHOICES} by id; open a webhook's page for the others`}
            </option>
          ) : null}
        </FilterSelect>
        <FilterSelect
          label="Status"
          name="status"
          value={filters.status}
          any="Any status"
          onChange={(status) => setFilter({ status })}
        >
          <Options values={WEBHOOK_CALL_STATUSES} />
        </FilterSelect>
        <EventTypeFilters entity={filters.entity} event={filters.event} onChange={setFilter} />
        <TimeFilter
          label="From"
          name="from"
          value={filters.from}
          onValue={(from) => setFilter({ from })}
        />
        <TimeFilter label="To" name="to" value={filters.to} onValue={(to) => setFilter({ to })} />
        {filtered && (
          <button type="button" class="button button-quiet" onClick={() => navigate('#/calls')}>
            Clear filters
          </button>
        )}
      </FilterForm>

      {list.length > 0 && (
        <div class="bulk-bar">
          <button type="button" class="button" onClick={() => setResending(true)}>
            Resend {total} matching {total === 1 ? 'call' : 'calls'}
          </button>
        </div>
      )}
      {resending && (
        <BulkResendDialog filters={filters} total={total} onClose={() => setResending(false)} />
      )}
      <LoadState resource={calls} label="Loading calls…" />
      {calls.data && list.length === 0 && (
        <Empty>
          <p>{filtered ? 'No calls match these filters.' : 'No calls yet.'}</p>
          <p class="muted">
            A call is logged each time an event matches a webhook; events arrive with POST /events.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <table class="table table-cards" aria-label="Webhook calls">
          <TableHead columns={['Call', 'Webhook', 'Event', 'Status', 'Response', 'Created']} />
          <tbody>
            {list.map((call) => {
              const webhookId = call.relationships?.webhook?.data?.id ?? '';
              return (
                <CallRow key={call.id} id={call.id}>
                  <td data-label="Webhook">{names.get(webhookId) ?? webhookId}</td>
                  <td data-label="Event">
                    <span class="mono">
                      {call.attributes.entity_type}.{call.attributes.event_type}
                    </span>
                    {call.attributes.event_ids.length > 1 && (
                      <span
                        class="muted small"
                        data-testid="carried-events"
                        title={call.attributes.event_ids.join(', ')}
                      >
                        {' '}
                        {call.attributes.event_ids.length} events
                      </span>
                    )}
                  </td>
                  <td data-label="Status">
                    <Badge status={call.attributes.status} />
                    {call.attributes.attempted_auto_retries_count > 0 && (
                      <span class="muted small">
                        {' '}
                        {call.attributes.attempted_auto_retries_count} retries
                      </span>
                    )}
                  </td>
                  <td data-label="Response" class="mono">
                    {call.attributes.response_status ?? '—'}
                  </td>
                  <td data-label="Created">{formatTime(call.attributes.created_at)}</td>
                </CallRow>
              );
            })}
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

/**
 * "Resend N matching calls": a bulk resend (POST /bulk_jobs) of exactly what the filters select,
 * with an optional pace; its progress is the job's page.
 */
/** One end of the time range: a local date and time, as the browser's picker gives it. */
function TimeFilter({ label, name, value, onValue }: ValueFieldProps) {
  return (
    <Field label={label}>
      <input
        type="datetime-local"
        name={name}
        value={value}
        onChange={(e) => onValue(e.currentTarget.value)}
      />
    </Field>
  );
}

function BulkResendDialog({
  filters,
  total,
  onClose,
}: {
  filters: CallFilters;
  total: number;
  onClose: () => void;
}) {
  const { client, notify } = useApp();
  const [pace, setPace] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const paceValue = parsePace(pace);
  const start = async () => {
    if ('error' in paceValue) return;
    setBusy(true);
    setError(null);
    try {
      const job = await startBulkJob(
        client,
        { kind: 'bulk_resend', filter: resendFilter(filters) },
        paceValue.value,
      );
      notify(`Bulk resend #${job.id} started`);
      navigate(`#/jobs/${job.id}`);
    } catch (failure) {
      setError(asFailure(failure));
      setBusy(false);
    }
  };
  return (
    <ConfirmDialog
      title={`Resend ${total} matching ${total === 1 ? 'call' : 'calls'}?`}
      confirmLabel="Start the resend"
      busy={busy || 'error' in paceValue}
      onCancel={onClose}
      onConfirm={() => void start()}
    >
      <p>
        Herald sends each call the filters select again, now, with the webhook's current settings
        and the same <code>webhook-id</code>. Calls already on their way (pending or retrying) are
        skipped, never doubled.
      </p>
      <PaceField
        label="Pace (calls per second, empty: as fast as delivery allows)"
        name="bulk_pace"
        value={pace}
        onValue={setPace}
      />
      {error && <ErrorNote error={error} />}
    </ConfirmDialog>
  );
}
