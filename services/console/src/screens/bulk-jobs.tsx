import { useState } from 'preact/hooks';
import { useApp } from '../app-context.js';
import {
  Badge,
  Empty,
  ErrorNote,
  Fact,
  Field,
  LoadState,
  TableHead,
  formatTime,
  BusyButton,
  type ValueFieldProps,
} from '../components/ui.js';
import { useInterval, useResource, useAction } from '../hooks.js';
import type { ApiClient, Collection } from '../lib/api.js';
import { KIND_LABEL, bulkJobBody, describeProgress, isActive, parsePace } from '../lib/bulk.js';
import type { BulkJob, ReplayOffer } from '../lib/types.js';

/** docs/api.md, GET /bulk_jobs/:id: poll it for a progress bar, every second. */
const POLL_MS = 1000;

/** Starts a job (POST /bulk_jobs, 202 with the job, queued). */
export async function startBulkJob(
  client: ApiClient,
  attributes: Record<string, unknown>,
  pace: number | null = null,
): Promise<BulkJob> {
  const created = await client.post<{ data: BulkJob }>('/bulk_jobs', bulkJobBody(attributes, pace));
  return created.data;
}

/** A job's optional pace, as typed, and what parsePace finds wrong with it. */
export function PaceField({ label, name, value, onValue }: ValueFieldProps) {
  const parsed = parsePace(value);
  const error = 'error' in parsed ? parsed.error : undefined;
  return (
    <Field label={label}>
      <input
        type="text"
        inputMode="decimal"
        name={name}
        value={value}
        aria-invalid={error ? true : undefined}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
      {error && <span class="reason small">{error}</span>}
    </Field>
  );
}

function ProgressBar({ job }: { job: BulkJob }) {
  const { progress, state } = job.attributes;
  const percent = progress === null ? null : Math.round(progress * 1000) / 10;
  return (
    <div
      class={`progress progress-${state}`}
      role="progressbar"
      aria-label="Job progress"
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={percent ?? undefined}
      aria-valuetext={describeProgress(job)}
    >
      <div
        class={percent === null ? 'progress-fill is-indeterminate' : 'progress-fill'}
        style={{ width: `${percent ?? 100}%` }}
      />
    </div>
  );
}

/**
 * One job, live: the progress bar and counts from GET /bulk_jobs/:id every second while it is
 * queued or running, and a cancel button.
 */
export function JobPanel({ id, heading = 2 }: { id: string; heading?: 2 | 3 }) {
  const { client, notify } = useApp();
  const job = useResource(
    (signal) => client.get<{ data: BulkJob }>(`/bulk_jobs/${encodeURIComponent(id)}`, { signal }),
    [client, id],
  );
  const data = job.data?.data;
  useInterval(() => job.reload(true), POLL_MS, !job.error && (!data || isActive(data)));
  const cancel = useAction();
  const cancelJob = () =>
    cancel.run(async () => {
      await client.post(`/bulk_jobs/${encodeURIComponent(id)}/cancel`);
      notify(`Job #${id} cancelled`);
      job.reload(true);
    });

  const Heading = heading === 2 ? 'h2' : 'h3';
  return (
    <section class="card job-panel" aria-label={`Job #${id}`} data-job-id={id}>
      <LoadState resource={job} label="Loading the job…" />
      {data && (
        <>
          <div class="job-head">
            <Heading class="job-title">
              {KIND_LABEL[data.attributes.kind]} <a href={`#/jobs/${id}`}>#{id}</a>
            </Heading>
            <Badge status={data.attributes.state} />
            {isActive(data) && (
              <BusyButton
                class="button button-small button-danger"
                busy={cancel.busy}
                busyLabel="Cancelling…"
                onClick={() => void cancelJob()}
              >
                Cancel job
              </BusyButton>
            )}
          </div>
          <ProgressBar job={data} />
          <p class="job-progress" aria-live="polite" data-testid="job-progress">
            {describeProgress(data)}
          </p>
          <dl class="facts job-counts">
            <Fact term="Matched">{data.attributes.matched ?? '…'}</Fact>
            <Fact term="Done">{data.attributes.done}</Fact>
            <Fact term="Succeeded">
              <span data-testid="job-succeeded">{data.attributes.succeeded}</span>
            </Fact>
            <Fact term="Failed">
              <span data-testid="job-failed">{data.attributes.failed}</span>
            </Fact>
            <Fact term="Skipped">
              <span data-testid="job-skipped">{data.attributes.skipped}</span>
            </Fact>
            <Fact term="Rate">
              {data.attributes.rate === null ? '—' : `${data.attributes.rate}/s`}
              {data.attributes.rate_per_second !== null && (
                <span class="muted small"> (paced at {data.attributes.rate_per_second}/s)</span>
              )}
            </Fact>
            <Fact term="Started">{formatTime(data.attributes.started_at)}</Fact>
            <Fact term="Finished">{formatTime(data.attributes.finished_at)}</Fact>
          </dl>
          {data.attributes.failure_reason && (
            <p class="reason small">{data.attributes.failure_reason}</p>
          )}
          {cancel.error && <ErrorNote error={cancel.error} />}
        </>
      )}
    </section>
  );
}

/** Recent jobs, newest first (GET /bulk_jobs), one webhook's when given; refreshed while open. */
export function JobList({ webhookId, limit = 10 }: { webhookId?: string; limit?: number }) {
  const { client } = useApp();
  const jobs = useResource(
    (signal) =>
      client.get<Collection<BulkJob>>('/bulk_jobs', {
        signal,
        query: {
          page: { limit: String(limit) },
          ...(webhookId ? { filter: { webhook_id: webhookId } } : {}),
        },
      }),
    [client, webhookId, limit],
  );
  useInterval(() => jobs.reload(true), 2 * POLL_MS, !jobs.error);
  const list = jobs.data?.data ?? [];
  return (
    <>
      <LoadState resource={jobs} label="Loading jobs…" />
      {jobs.data && list.length === 0 && (
        <Empty>
          <p>No bulk jobs yet.</p>
          <p class="muted">
            Resend many calls from the call log's filters, or replay a webhook's events from its
            page.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <table class="table table-cards" aria-label="Recent jobs">
          <TableHead columns={['Job', 'State', 'Progress', 'Created']} />
          <tbody>
            {list.map((job) => (
              <tr key={job.id} data-job-row={job.id}>
                <td data-label="Job">
                  <a class="strong" href={`#/jobs/${job.id}`}>
                    {KIND_LABEL[job.attributes.kind]} #{job.id}
                  </a>
                  {job.relationships.webhook.data && (
                    <div class="muted small">
                      webhook{' '}
                      <a href={`#/webhooks/${job.relationships.webhook.data.id}`}>
                        #{job.relationships.webhook.data.id}
                      </a>
                    </div>
                  )}
                </td>
                <td data-label="State">
                  <Badge status={job.attributes.state} />
                </td>
                <td data-label="Progress">
                  {describeProgress(job)}
                  <div class="muted small">
                    {job.attributes.succeeded} succeeded, {job.attributes.failed} failed,{' '}
                    {job.attributes.skipped} skipped
                  </div>
                </td>
                <td data-label="Created">{formatTime(job.attributes.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** #/jobs and #/jobs/:id: every recent job, or one job's live panel. */
export function BulkJobs({ id }: { id: string | undefined }) {
  return (
    <section aria-labelledby="jobs-title">
      {id && (
        <p class="crumbs">
          <a href="#/jobs">← Bulk jobs</a>
        </p>
      )}
      <div class="page-head">
        <h1 id="jobs-title">{id ? `Job #${id}` : 'Bulk jobs'}</h1>
      </div>
      {id ? <JobPanel key={id} id={id} /> : <JobList limit={30} />}
    </section>
  );
}

/**
 * PUT /webhooks/:id answered a replay offer (the webhook was re-enabled): one button sends it as
 * it is to POST /bulk_jobs, then the job's progress shows here.
 */
export function ReplayOfferNote({
  offer,
  onDismiss,
}: {
  offer: ReplayOffer;
  onDismiss: () => void;
}) {
  const { client } = useApp();
  const [job, setJob] = useState<string | null>(null);
  const replay = useAction();
  if (job) return <JobPanel id={job} heading={3} />;
  const start = () =>
    replay.run(async () => {
      setJob((await startBulkJob(client, { ...offer })).id);
    });
  return (
    <div class="note note-warning replay-offer" role="status">
      <p>
        The webhook was disabled from {formatTime(offer.filter.occurred_at.gt)}
        {offer.filter.occurred_at.lt && ` to ${formatTime(offer.filter.occurred_at.lt)}`}: the
        events of that time were not sent to it.
      </p>
      <div class="actions">
        <BusyButton class="button button-primary" busy={replay.busy} onClick={() => void start()}>
          Replay what it missed (since {formatTime(offer.filter.occurred_at.gt)})
        </BusyButton>
        <button type="button" class="button button-quiet" onClick={onDismiss}>
          No, thanks
        </button>
      </div>
      {replay.error && <ErrorNote error={replay.error} />}
    </div>
  );
}
