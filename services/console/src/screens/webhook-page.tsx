import type { WebhookCallResource, WebhookStatsResource } from '@herald/contract/tables';
import { useMemo, useState } from 'preact/hooks';
import { useApp } from '../app-context.js';
import { Chart } from '../components/chart.js';
import { Badge, ErrorNote, Fact, Field, LoadState, Loading, formatTime } from '../components/ui.js';
import { useInterval, useResource } from '../hooks.js';
import { asFailure, type ApiFailure } from '../lib/api.js';
import { parsePace, replayFilter } from '../lib/bulk.js';
import { formatRoute } from '../lib/route.js';
import { formatDuration, formatMs, statsSeries } from '../lib/stats-series.js';
import type { ReplayOffer, Webhook } from '../lib/types.js';
import { setWebhookEnabled } from '../lib/webhook-actions.js';
import { JobList, JobPanel, PaceField, ReplayOfferNote, startBulkJob } from './bulk-jobs.js';
import { WebhookNotices } from './webhook-notices.js';

const WINDOWS = ['1h', '24h', '7d', '30d'] as const;
type StatsWindow = (typeof WINDOWS)[number];
const WINDOW_LABEL: Record<StatsWindow, string> = {
  '1h': '1 hour',
  '24h': '24 hours',
  '7d': '7 days',
  '30d': '30 days',
};
const REFRESH_MS = 5000;

function readWindow(params: URLSearchParams): StatsWindow {
  const value = params.get('window');
  return WINDOWS.find((w) => w === value) ?? '24h';
}

/**
 * #/webhooks/:id — a webhook's health (GET /webhooks/:id/stats) over a chosen window, with its
 * charts, the circuit breaker, a test send, replays and their jobs. The editor is at
 * #/webhooks/:id/edit.
 */
export function WebhookPage({ id, params }: { id: string; params: URLSearchParams }) {
  const { client, notify } = useApp();
  const window = readWindow(params);
  const webhook = useResource(
    (signal) => client.get<{ data: Webhook }>(`/webhooks/${encodeURIComponent(id)}`, { signal }),
    [client, id],
  );
  const stats = useResource(
    (signal) =>
      client.get<{ data: WebhookStatsResource }>(`/webhooks/${encodeURIComponent(id)}/stats`, {
        signal,
        query: { window },
      }),
    [client, id, window],
  );
  useInterval(
    () => {
      stats.reload(true);
      webhook.reload(true);
    },
    REFRESH_MS,
    !stats.error,
  );
  const [offer, setOffer] = useState<ReplayOffer | null>(null);
  const [toggling, setToggling] = useState(false);
  const [actionError, setActionError] = useState<ApiFailure | null>(null);
  const [testCall, setTestCall] = useState<string | null>(null);

  const hook = webhook.data?.data;
  if (webhook.error) {
    return (
      <section>
        <p class="crumbs">
          <a href="#/webhooks">← Webhooks</a>
        </p>
        <ErrorNote error={webhook.error} onRetry={() => webhook.reload()} />
      </section>
    );
  }
  if (!hook) return <Loading label="Loading the webhook…" />;

  const toggle = async () => {
    setToggling(true);
    setActionError(null);
    try {
      const { offer: next } = await setWebhookEnabled(client, hook, !hook.attributes.enabled);
      notify(hook.attributes.enabled ? 'Webhook disabled' : 'Webhook enabled');
      setOffer(next);
      webhook.reload(true);
      stats.reload(true);
    } catch (error) {
      setActionError(asFailure(error));
    } finally {
      setToggling(false);
    }
  };

  const { enabled, disabled_reason: reason } = hook.attributes;
  return (
    <section aria-labelledby="webhook-title">
      <p class="crumbs">
        <a href="#/webhooks">← Webhooks</a>
      </p>
      <div class="page-head">
        <div>
          <h1 id="webhook-title">{hook.attributes.name}</h1>
          <p class="muted small mono break">{hook.attributes.url}</p>
        </div>
        <div class="actions">
          <Badge status={enabled ? 'enabled' : 'disabled'} />
          <SendTest webhookId={id} onSent={setTestCall} onError={setActionError} />
          <a class="button" href={formatRoute(['calls'], { webhook: id })}>
            Calls
          </a>
          <a class="button" href={`#/webhooks/${id}/edit`}>
            Edit
          </a>
          <button type="button" class="button" disabled={toggling} onClick={() => void toggle()}>
            {enabled ? 'Disable' : 'Enable'}
          </button>
        </div>
      </div>
      {!enabled && reason && <div class="note note-warning">Disabled: {reason}</div>}
      {actionError && <ErrorNote error={actionError} />}
      {testCall && <TestCall key={testCall} id={testCall} onClose={() => setTestCall(null)} />}
      {offer && <ReplayOfferNote offer={offer} onDismiss={() => setOffer(null)} />}

      <div class="page-head">
        <h2>Health</h2>
        <nav class="segmented" aria-label="Statistics window">
          {WINDOWS.map((w) => (
            <a
              key={w}
              href={formatRoute(['webhooks', id], { window: w })}
              aria-current={w === window ? 'true' : undefined}
              title={`The last ${WINDOW_LABEL[w]}`}
            >
              {w}
            </a>
          ))}
        </nav>
      </div>
      <LoadState resource={stats} label="Loading statistics…" />
      {stats.data && <Health stats={stats.data.data} />}

      <WebhookNotices webhookId={id} />
      <Replay webhookId={id} enabled={enabled} />
      <h2>Bulk jobs of this webhook</h2>
      <JobList webhookId={id} limit={5} />
    </section>
  );
}

function Health({ stats }: { stats: WebhookStatsResource }) {
  const a = stats.attributes;
  const series = useMemo(() => statsSeries(a), [stats]);
  const windowLabel = WINDOW_LABEL[a.window];
  const circuit = a.circuit;
  return (
    <>
      <dl class="facts card health" aria-label="Health">
        <Fact term={`Success rate (${a.window})`}>
          <span class="big" data-testid="success-rate">
            {a.success_rate === null ? '—' : `${Math.round(a.success_rate * 1000) / 10} %`}
          </span>
          <div class="muted small">
            {a.attempts.success} of {a.attempts.total} attempts
          </div>
        </Fact>
        <Fact term="Latency p50 / p95 / p99">
          <span data-testid="latency">
            {formatMs(a.latency_ms.p50)} / {formatMs(a.latency_ms.p95)} /{' '}
            {formatMs(a.latency_ms.p99)}
          </span>
        </Fact>
        <Fact term="Last success">{formatTime(a.last_success_at)}</Fact>
        <Fact term="Last failure">{formatTime(a.last_failure_at)}</Fact>
        <Fact term="Failure streak">
          <span data-testid="failure-streak" class={a.failure_streak > 0 ? 'reason' : undefined}>
            {a.failure_streak === 0 ? 'None' : `${a.failure_streak} in a row`}
          </span>
        </Fact>
        <Fact term="Backlog">
          <span data-testid="backlog">
            {a.backlog.pending + a.backlog.rescheduled === 0
              ? 'Empty'
              : `${a.backlog.pending} pending, ${a.backlog.rescheduled} retrying`}
          </span>
          {a.backlog.oldest_age_seconds !== null && (
            <div class="muted small">oldest {formatDuration(a.backlog.oldest_age_seconds)}</div>
          )}
        </Fact>
        <Fact term="Circuit">
          <span data-testid="circuit">
            <Badge status={`circuit-${circuit.state}`} />
          </span>
          <div class="muted small">
            {circuit.state === 'open'
              ? `calls wait until ${formatTime(circuit.open_until)}`
              : circuit.state === 'half_open'
                ? 'one probe decides'
                : `${circuit.failures} failures in a run`}
          </div>
        </Fact>
      </dl>
      <div class="charts">
        <Chart
          kind="deliveries"
          title={`Deliveries per ${a.granularity}`}
          summary={`${a.attempts.success} succeeded and ${a.attempts.failure} failed attempts in the last ${windowLabel}.`}
          series={series}
        />
        <Chart
          kind="latency"
          title={`Median latency per ${a.granularity}`}
          summary={`p50 ${formatMs(a.latency_ms.p50)}, p95 ${formatMs(a.latency_ms.p95)}, p99 ${formatMs(a.latency_ms.p99)} over the last ${windowLabel}.`}
          series={series}
        />
      </div>
    </>
  );
}

/** POST /webhooks/:id/test; the page then follows the call it made (TestCall). */
function SendTest({
  webhookId,
  onSent,
  onError,
}: {
  webhookId: string;
  onSent: (callId: string) => void;
  onError: (error: ApiFailure | null) => void;
}) {
  const { client } = useApp();
  const [busy, setBusy] = useState(false);
  const send = async () => {
    setBusy(true);
    onError(null);
    try {
      const answer = await client.post<{ data: WebhookCallResource }>(
        `/webhooks/${encodeURIComponent(webhookId)}/test`,
      );
      onSent(answer.data.id);
    } catch (failure) {
      onError(asFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="button button-primary" disabled={busy} onClick={() => void send()}>
      {busy ? 'Sending…' : 'Send test'}
    </button>
  );
}

/** The test call, followed every second until it has its outcome. */
function TestCall({ id, onClose }: { id: string; onClose: () => void }) {
  const { client } = useApp();
  const call = useResource(
    (signal) =>
      client.get<{ data: WebhookCallResource }>(`/webhook_calls/${encodeURIComponent(id)}`, {
        signal,
      }),
    [client, id],
  );
  const a = call.data?.data.attributes;
  useInterval(() => call.reload(true), 1000, !call.error && (!a || a.status === 'pending'));
  return (
    <div class="note test-call" role="status" aria-live="polite" data-testid="test-call">
      <p>
        <strong>Test call</strong> <a href={`#/calls/${id}`}>#{id}</a>{' '}
        {a ? <Badge status={a.status} /> : '…'}{' '}
        {a && a.status !== 'pending' && (
          <span class="mono">
            {a.response_status !== null ? `HTTP ${a.response_status}` : a.failure_reason}
          </span>
        )}
      </p>
      <p class="small">
        <a href={`#/calls/${id}`}>Open the call and its attempts</a> ·{' '}
        <button type="button" class="button button-small button-quiet" onClick={onClose}>
          Dismiss
        </button>
      </p>
      {call.error && <ErrorNote error={call.error} />}
    </div>
  );
}

/** A replay of a time range's events to this webhook (POST /bulk_jobs, kind replay). */
function Replay({ webhookId, enabled }: { webhookId: string; enabled: boolean }) {
  const { client } = useApp();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [pace, setPace] = useState('');
  const [job, setJob] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const paceValue = parsePace(pace);

  const start = async (event: Event) => {
    event.preventDefault();
    if ('error' in paceValue) return;
    setBusy(true);
    setError(null);
    try {
      const created = await startBulkJob(
        client,
        { kind: 'replay', webhook_id: webhookId, filter: replayFilter(from, to) },
        paceValue.value,
      );
      setJob(created.id);
    } catch (failure) {
      setError(asFailure(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="card">
      <h2>Replay events</h2>
      <p class="muted small">
        Sends this webhook the stored events of a time range that its entries match, in the order
        they occurred (events it already had go again on their own call). Empty bounds: every stored
        event.
      </p>
      <form class="filters" aria-label="Replay events" onSubmit={start}>
        {(
          [
            ['Occurred after', 'replay_from', from, setFrom],
            ['Occurred before', 'replay_to', to, setTo],
          ] as const
        ).map(([label, name, value, set]) => (
          <Field key={name} label={label}>
            <input
              type="datetime-local"
              name={name}
              value={value}
              onInput={(e) => set(e.currentTarget.value)}
            />
          </Field>
        ))}
        <PaceField
          label="Pace (calls/s, optional)"
          name="replay_pace"
          value={pace}
          onValue={setPace}
        />
        <div class="field">
          <button type="submit" class="button" disabled={busy || !enabled || 'error' in paceValue}>
            {busy ? 'Starting…' : 'Replay'}
          </button>
        </div>
      </form>
      {!enabled && <p class="muted small">Enable the webhook to replay events to it.</p>}
      {error && <ErrorNote error={error} />}
      {job && <JobPanel key={job} id={job} heading={3} />}
    </div>
  );
}
