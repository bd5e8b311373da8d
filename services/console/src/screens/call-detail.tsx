import type { WebhookCallAttemptResource, WebhookCallResource } from '@herald/contract/tables';
import { useApp } from '../app-context.js';
import {
  Badge,
  BodyView,
  ErrorNote,
  Fact,
  HeadersTable,
  LoadState,
  formatTime,
  BusyButton,
  Screen,
} from '../components/ui.js';
import { useInterval, useResource, useAction } from '../hooks.js';
import { formatRoute } from '../lib/route.js';
import { formatDuration, formatMs } from '../lib/stats-series.js';

const REFRESH_MS = 3000;

export function CallDetail({ id }: { id: string }) {
  const { client, notify } = useApp();
  const call = useResource(
    (signal) =>
      client.get<{ data: WebhookCallResource }>(`/webhook_calls/${encodeURIComponent(id)}`, {
        signal,
      }),
    [client, id],
  );
  const attempts = useResource(
    (signal) =>
      client.get<{ data: WebhookCallAttemptResource[]; meta: { total_count: number } }>(
        `/webhook_calls/${encodeURIComponent(id)}/attempts?page[limit]=500`,
        { signal },
      ),
    [client, id],
  );
  const resend = useAction();
  // The call changes while it is retried or resent: keep it current while it is open.
  useInterval(
    () => {
      call.reload(true);
      attempts.reload(true);
    },
    REFRESH_MS,
    !call.error,
  );

  const resendCall = () =>
    resend.run(async () => {
      await client.post(`/webhook_calls/${encodeURIComponent(id)}/resend_webhook`);
      notify(`Call #${id} resent`);
      call.reload(true);
      attempts.reload(true);
    });

  const data = call.data?.data;
  const attributes = data?.attributes;
  const webhookId = data?.relationships?.webhook?.data?.id;
  return (
    <Screen
      id="call"
      title={`Call #${id}`}
      back={{ href: '#/calls', label: 'Call log' }}
      actions={
        attributes && (
          <div class="actions">
            <Badge status={attributes.status} />
            <BusyButton
              class="button button-primary"
              busy={resend.busy}
              busyLabel="Resending…"
              onClick={() => void resendCall()}
            >
              Resend
            </BusyButton>
          </div>
        )
      }
    >
      {resend.error && <ErrorNote error={resend.error} />}
      <LoadState resource={call} label="Loading the call…" />
      {attributes && (
        <>
          <dl class="facts card">
            <Fact term="Event" mono>
              {attributes.entity_type}.{attributes.event_type}
              {typeof attributes['event_id'] === 'string' && (
                <span class="muted"> ({attributes['event_id']})</span>
              )}
            </Fact>
            {attributes.event_ids.length > 1 && (
              <Fact term={`Carries ${attributes.event_ids.length} events`} mono>
                <span data-testid="carried-events">{attributes.event_ids.join(', ')}</span>
              </Fact>
            )}
            <Fact term="Webhook">
              {webhookId ? <a href={`#/webhooks/${webhookId}`}>#{webhookId}</a> : '—'}{' '}
              {webhookId && (
                <a class="small" href={formatRoute(['calls'], { webhook: webhookId })}>
                  (its calls)
                </a>
              )}
            </Fact>
            <Fact term="Created">{formatTime(attributes.created_at)}</Fact>
            <Fact term="Last sent">{formatTime(attributes.last_sent_at)}</Fact>
            <Fact term="Automatic retries">{attributes.attempted_auto_retries_count}</Fact>
            <Fact term="Next retry">{formatTime(attributes.next_retry_at)}</Fact>
          </dl>
          <div class="split">
            <div class="card">
              <h2>Request</h2>
              <p class="mono break">POST {attributes.request_url ?? '—'}</p>
              <h3>Headers</h3>
              <HeadersTable headers={attributes.request_headers} />
              <h3>Body</h3>
              <BodyView body={attributes.request_payload} label="Request body" />
            </div>
            <div class="card">
              <h2>
                Response{' '}
                <span class="mono" data-testid="response-status">
                  {attributes.response_status ?? ''}
                </span>
              </h2>
              {attributes.response_status === null && (
                <p class="muted">
                  {attributes.status === 'pending'
                    ? 'Not answered yet.'
                    : typeof attributes['failure_reason'] === 'string'
                      ? attributes['failure_reason']
                      : 'No response was received.'}
                </p>
              )}
              <h3>Headers</h3>
              <HeadersTable headers={attributes.response_headers} />
              <h3>Body</h3>
              <BodyView body={attributes.response_payload} label="Response body" />
            </div>
          </div>
          <Attempts attempts={attempts.data?.data} total={attempts.data?.meta.total_count} />
        </>
      )}
    </Screen>
  );
}

const TRIGGER_LABEL: Record<string, string> = {
  first: 'First attempt',
  retry: 'Automatic retry',
  resend: 'Resend',
  bulk_resend: 'Bulk resend',
  replay: 'Replay',
  test: 'Test',
};

/**
 * Every attempt of the call, oldest first, as a timeline: what made it, when (and how long after
 * the previous one), how long it took, and what came back.
 */
function Attempts({
  attempts,
  total,
}: {
  attempts: WebhookCallAttemptResource[] | undefined;
  total: number | undefined;
}) {
  if (!attempts) return null;
  const slowest = Math.max(1, ...attempts.map(({ attributes: a }) => a.duration_ms ?? 0));
  return (
    <div class="card">
      <h2>
        Attempts <span class="muted small">{total ?? attempts.length}</span>
      </h2>
      {attempts.length === 0 ? (
        <p class="muted">Not attempted yet.</p>
      ) : (
        <ol class="timeline" aria-label="Attempts">
          {attempts.map(({ id, attributes: a }, index) => {
            const previous = attempts[index - 1]?.attributes.started_at;
            const gap = previous ? (Date.parse(a.started_at) - Date.parse(previous)) / 1000 : null;
            return (
              <li key={id} data-attempt={a.number} class={`timeline-item outcome-${a.outcome}`}>
                <span class="timeline-dot" aria-hidden="true" />
                <div class="timeline-main">
                  <p class="timeline-line">
                    <span class="mono muted">#{a.number}</span>{' '}
                    <strong>{TRIGGER_LABEL[a.trigger] ?? a.trigger}</strong>{' '}
                    <Badge status={a.outcome} />{' '}
                    <span class="mono">
                      {a.response_status !== null ? `HTTP ${a.response_status}` : 'no answer'}
                    </span>
                  </p>
                  <p class="muted small">
                    {formatTime(a.started_at)}
                    {gap !== null &&
                      ` · ${formatDuration(Math.max(0, gap))} after #${a.number - 1}`}
                  </p>
                  {a.failure_reason && a.failure_reason !== `HTTP ${a.response_status}` && (
                    <p class="reason small">{a.failure_reason}</p>
                  )}
                </div>
                <div class="timeline-duration" title="Duration">
                  <span class="mono">{formatMs(a.duration_ms)}</span>
                  <span class="duration-bar" aria-hidden="true">
                    <span style={{ width: `${((a.duration_ms ?? 0) / slowest) * 100}%` }} />
                  </span>
                </div>
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
