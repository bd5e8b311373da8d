import type { EventCallResource, EventResource } from '@herald/contract/tables';
import { useApp } from '../app-context.js';
import {
  Badge,
  BodyView,
  Empty,
  Fact,
  LoadState,
  TableHead,
  formatTime,
  Screen,
  CallRow,
} from '../components/ui.js';
import { useInterval, useResource, useWebhooks } from '../hooks.js';
import { formatRoute } from '../lib/route.js';

const REFRESH_MS = 3000;

/** JSON, pretty-printed by BodyView; absent stays absent. */
const asBody = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

/**
 * GET /events/:id: what was sent, and where each of its webhook calls stands. Refreshes while
 * open, as calls are retried.
 */
export function EventDetail({ id }: { id: string }) {
  const { client } = useApp();
  const event = useResource(
    (signal) =>
      client.get<{ data: EventResource; included?: EventCallResource[] }>(
        `/events/${encodeURIComponent(id)}`,
        { signal },
      ),
    [client, id],
  );
  const webhooks = useWebhooks(client);
  useInterval(() => event.reload(true), REFRESH_MS, !event.error);

  const attributes = event.data?.data.attributes;
  const calls = event.data?.included ?? [];
  const names = new Map((webhooks.data?.data ?? []).map((w) => [w.id, w.attributes.name]));
  return (
    <Screen
      id="event"
      title={`Event ${id}`}
      titleClass="break"
      back={{ href: '#/events', label: 'Events' }}
    >
      <LoadState resource={event} label="Loading the event…" />
      {attributes && (
        <>
          <dl class="facts card">
            <Fact term="Event" mono>
              {attributes.entity_type}.{attributes.event_type}
            </Fact>
            <Fact term="Entity" mono>
              {attributes.entity_id ? (
                <a href={formatRoute(['events'], { entity_id: attributes.entity_id })}>
                  {attributes.entity_id}
                </a>
              ) : (
                '—'
              )}
            </Fact>
            <Fact term="Environment">{attributes.environment}</Fact>
            <Fact term="Occurred">{formatTime(attributes.occurred_at)}</Fact>
            <Fact term="Accepted">{formatTime(attributes.accepted_at)}</Fact>
            <Fact term="Matched">
              {attributes.matched_at ? formatTime(attributes.matched_at) : 'Not yet'}
            </Fact>
          </dl>
          <div class="card">
            <h2>Webhook calls</h2>
            {calls.length === 0 ? (
              <Empty>
                <p>
                  {attributes.matched_at
                    ? 'No webhook matched this event (or its finished calls were pruned).'
                    : 'Not matched yet: its calls are made when it is.'}
                </p>
              </Empty>
            ) : (
              <table class="table table-cards" aria-label="Webhook calls">
                <TableHead
                  columns={[
                    'Call',
                    'Webhook',
                    'Status',
                    'Attempts',
                    'Response',
                    'Last sent',
                    'Next retry',
                  ]}
                />
                <tbody>
                  {calls.map((call) => {
                    const webhookId = call.relationships.webhook.data.id;
                    return (
                      <CallRow key={call.id} id={call.id}>
                        <td data-label="Webhook">
                          <a href={`#/webhooks/${webhookId}`}>
                            {names.get(webhookId) ?? `#${webhookId}`}
                          </a>
                        </td>
                        <td data-label="Status">
                          <Badge
                            status={call.attributes.status}
                            title={call.attributes.failure_reason ?? undefined}
                          />
                        </td>
                        <td data-label="Attempts">{call.attributes.attempts_count}</td>
                        <td data-label="Response" class="mono">
                          {call.attributes.response_status ?? call.attributes.failure_reason ?? '—'}
                        </td>
                        <td data-label="Last sent">{formatTime(call.attributes.last_sent_at)}</td>
                        <td data-label="Next retry">{formatTime(call.attributes.next_retry_at)}</td>
                      </CallRow>
                    );
                  })}
                </tbody>
              </table>
            )}
          </div>
          <div class="split">
            <div class="card">
              <h2>Entity</h2>
              <BodyView body={asBody(attributes.entity)} label="Entity" />
            </div>
            <div class="card">
              <h2>Previous entity</h2>
              {attributes.previous_entity ? (
                <BodyView body={asBody(attributes.previous_entity)} label="Previous entity" />
              ) : (
                <p class="muted">The event carried none.</p>
              )}
            </div>
          </div>
        </>
      )}
    </Screen>
  );
}
