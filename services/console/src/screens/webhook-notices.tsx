import type { LoggedEventResource } from '@herald/contract/tables';
import { useApp } from '../app-context.js';
import { Empty, LoadState, formatTime } from '../components/ui.js';
import { useInterval, useResource } from '../hooks.js';
import type { Collection } from '../lib/api.js';
import { formatRoute } from '../lib/route.js';

/** What each notice says (docs/api.md, Notices), for the webhook it is about. */
const NOTICE: Record<string, { label: string; tone: 'bad' | 'ok' | 'info'; says: string }> = {
  failing: { label: 'Failing', tone: 'bad', says: 'Its attempts failed several times in a row.' },
  recovered: { label: 'Recovered', tone: 'ok', says: 'An attempt succeeded after it was failing.' },
  circuit_opened: {
    label: 'Circuit opened',
    tone: 'bad',
    says: 'Its endpoint looked away: calls wait for the cool-down, then one probe decides.',
  },
  disabled: {
    label: 'Disabled by Herald',
    tone: 'bad',
    says: 'It answered 410 Gone, or every attempt failed for too long.',
  },
  bulk_job_finished: {
    label: 'Bulk job finished',
    tone: 'info',
    says: 'A bulk resend or replay of it ended.',
  },
};

const LIMIT = 10;

/**
 * Herald's notices about one webhook, newest first: its own events of entity type `notice`
 * (GET /events?filter[entity_type]=notice&filter[entity_id]=<webhook id>), refreshed while open;
 * each links to the event's page, which has the whole message and where the notice was sent.
 */
export function WebhookNotices({ webhookId }: { webhookId: string }) {
  const { client } = useApp();
  const notices = useResource(
    (signal) =>
      client.get<Collection<LoggedEventResource>>('/events', {
        signal,
        query: {
          filter: { entity_type: 'notice', entity_id: webhookId },
          page: { limit: String(LIMIT) },
        },
      }),
    [client, webhookId],
  );
  useInterval(() => notices.reload(true), 5000, !notices.error);
  const list = notices.data?.data ?? [];
  const total = notices.data?.meta?.total_count ?? list.length;
  return (
    <section class="card" aria-labelledby="notices-title">
      <h2 id="notices-title">
        Notices <span class="muted small">{notices.data ? total : ''}</span>
      </h2>
      <LoadState resource={notices} label="Loading notices…" />
      {notices.data && list.length === 0 && (
        <Empty>
          <p>No notices about this webhook.</p>
          <p class="muted small">
            Herald tells when it starts failing, recovers, opens its circuit or is disabled, and
            when a bulk job of it ends. Subscribe a webhook to the entity type notice to receive
            them.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <ol class="notices" aria-label="Notices">
          {list.map((event) => {
            const notice = NOTICE[event.attributes.event_type];
            return (
              <li key={event.id} class={`notice notice-${notice?.tone ?? 'info'}`}>
                <strong>{notice?.label ?? event.attributes.event_type}</strong>{' '}
                <span class="muted small">{formatTime(event.attributes.occurred_at)}</span>
                <div class="small">
                  {notice?.says}{' '}
                  <a href={`#/events/${encodeURIComponent(event.id)}`}>The notice and its calls</a>
                </div>
              </li>
            );
          })}
        </ol>
      )}
      {total > LIMIT && (
        <p class="small">
          <a href={formatRoute(['events'], { entity: 'notice', entity_id: webhookId })}>
            All {total} notices
          </a>
        </p>
      )}
    </section>
  );
}
