import type { WebhookStatsResource } from '@herald/contract/tables';
import { useEffect, useState } from 'preact/hooks';
import { navigate, useApp } from '../app-context.js';
import {
  Badge,
  Empty,
  ErrorNote,
  Field,
  LoadState,
  Pager,
  TableHead,
  formatTime,
  Screen,
} from '../components/ui.js';
import { useDebounced, useResource } from '../hooks.js';
import type { ApiFailure, Collection } from '../lib/api.js';
import { summarizeHealth, type HealthSummary } from '../lib/webhook-health.js';
import { formatRoute } from '../lib/route.js';
import type { ReplayOffer, Webhook } from '../lib/types.js';
import { setWebhookEnabled } from '../lib/webhook-actions.js';
import { ReplayOfferNote } from './bulk-jobs.js';

function eventsSummary(webhook: Webhook): string {
  return webhook.attributes.events
    .map((entry) => `${entry.entity_type}: ${entry.event_types.join(', ')}`)
    .join(' · ');
}

const PAGE_SIZE = 50;

/**
 * #/webhooks?q=…&offset=… — one page of the webhooks (GET /webhooks with page and filter[query],
 * so thousands of webhooks stay fast) and the health of that page's webhooks only
 * (GET /webhook_stats?filter[ids]=…).
 */
export function WebhookList({ params }: { params: URLSearchParams }) {
  const { client, notify } = useApp();
  const query = params.get('q') ?? '';
  const offset = Math.max(0, Number(params.get('offset') ?? 0) || 0);
  const webhooks = useResource(
    (signal) =>
      client.get<Collection<Webhook>>('/webhooks', {
        signal,
        query: {
          page: { offset: String(offset), limit: String(PAGE_SIZE) },
          filter: { query },
        },
      }),
    [client, query, offset],
  );
  const pageIds = (webhooks.data?.data ?? []).map((webhook) => webhook.id).join(',');
  // The page's health over the last 24 hours, in one call (kept as rollups by Herald).
  const stats = useResource(
    (signal) =>
      pageIds
        ? client.get<Collection<WebhookStatsResource>>('/webhook_stats', {
            signal,
            query: { window: '24h', filter: { ids: pageIds } },
          })
        : Promise.resolve({ data: [] }),
    [client, pageIds],
  );
  const [search, setSearch] = useState(query);
  const debounced = useDebounced(search, 300);
  useEffect(() => {
    if (debounced !== query) navigate(formatRoute(['webhooks'], { q: debounced }));
  }, [debounced]);
  const [toggling, setToggling] = useState<string | null>(null);
  const [toggleError, setToggleError] = useState<{ id: string; error: ApiFailure } | null>(null);
  const [offer, setOffer] = useState<ReplayOffer | null>(null);

  const toggle = async (webhook: Webhook) => {
    setToggling(webhook.id);
    setToggleError(null);
    try {
      const { offer: next } = await setWebhookEnabled(client, webhook, !webhook.attributes.enabled);
      setOffer(next);
      notify(`${webhook.attributes.name} ${webhook.attributes.enabled ? 'disabled' : 'enabled'}`);
      webhooks.reload(true);
    } catch (error) {
      setToggleError({ id: webhook.id, error: error as ApiFailure });
    } finally {
      setToggling(null);
    }
  };

  const summaries = new Map<string, HealthSummary>(
    (stats.data?.data ?? []).map((s) => [s.id, summarizeHealth(s)]),
  );
  const list = webhooks.data?.data ?? [];
  const total = webhooks.data?.meta?.total_count ?? list.length;

  return (
    <Screen
      id="webhooks"
      title="Webhooks"
      actions={
        <a class="button button-primary" href="#/webhooks/new">
          New webhook
        </a>
      }
    >
      {offer && <ReplayOfferNote offer={offer} onDismiss={() => setOffer(null)} />}
      <form class="filters card" role="search" onSubmit={(e) => e.preventDefault()}>
        <Field label="Search by name or URL" grow>
          <input
            type="search"
            name="q"
            value={search}
            placeholder="e.g. indexer, example.com"
            onInput={(e) => setSearch(e.currentTarget.value)}
          />
        </Field>
        {webhooks.data && (
          <p class="muted small" aria-live="polite" data-testid="webhook-count">
            {query ? `${total} matching` : `${total} ${total === 1 ? 'webhook' : 'webhooks'}`}
          </p>
        )}
      </form>
      <LoadState resource={webhooks} label="Loading webhooks…" />
      {webhooks.data && list.length === 0 && query && (
        <Empty>
          <p>No webhook's name or URL contains “{query}”.</p>
        </Empty>
      )}
      {webhooks.data && list.length === 0 && !query && offset === 0 && (
        <Empty>
          <p>No webhooks yet.</p>
          <p class="muted">
            A webhook sends Herald's events (records published, models changed, deploys…) to a URL
            of yours.
          </p>
          <a class="button button-primary" href="#/webhooks/new">
            Create the first one
          </a>
        </Empty>
      )}
      {stats.error && (
        <p class="muted small" role="status">
          Webhook statistics are unavailable: {stats.error.message}
        </p>
      )}
      {list.length > 0 && (
        <table class="table table-cards" aria-describedby="webhooks-caption">
          <TableHead
            columns={[
              'Name',
              'State',
              'Last attempt',
              'Success (24 h)',
              <span class="visually-hidden">Actions</span>,
            ]}
          />
          <tbody>
            {list.map((webhook) => {
              const summary = summaries.get(webhook.id);
              const { enabled, disabled_reason: reason } = webhook.attributes;
              return (
                <tr key={webhook.id} data-webhook-id={webhook.id}>
                  <td data-label="Name">
                    <a class="strong" href={`#/webhooks/${webhook.id}`}>
                      {webhook.attributes.name}
                    </a>
                    <div class="muted small mono truncate" title={webhook.attributes.url}>
                      {webhook.attributes.url}
                    </div>
                    <div class="muted small">{eventsSummary(webhook) || 'No events'}</div>
                  </td>
                  <td data-label="State">
                    <Badge status={enabled ? 'enabled' : 'disabled'} />
                    {!enabled && reason && <div class="small reason">{reason}</div>}
                  </td>
                  <td data-label="Last attempt">
                    {stats.loading && !stats.data ? (
                      <span class="muted">…</span>
                    ) : summary?.last ? (
                      <a
                        href={formatRoute(['calls'], { webhook: webhook.id })}
                        title="Open this webhook's calls"
                      >
                        <Badge status={summary.last.outcome} />
                        <div class="muted small">{formatTime(summary.last.at)}</div>
                      </a>
                    ) : (
                      <span class="muted">No calls yet</span>
                    )}
                    {summary?.circuit && <div class="small reason">{summary.circuit}</div>}
                    {summary && summary.failureStreak > 0 && (
                      <div class="small reason">
                        {summary.failureStreak} failed in a row
                        {summary.backlog > 0 && `, ${summary.backlog} waiting`}
                      </div>
                    )}
                  </td>
                  <td data-label="Success (24 h)">
                    {summary ? (
                      <span title={summary.rateTitle}>{summary.rate}</span>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td>
                    <div class="row-actions">
                      <button
                        type="button"
                        class="button button-small"
                        disabled={toggling === webhook.id}
                        onClick={() => void toggle(webhook)}
                        aria-label={`${enabled ? 'Disable' : 'Enable'} ${webhook.attributes.name}`}
                      >
                        {enabled ? 'Disable' : 'Enable'}
                      </button>
                      <a class="button button-small" href={`#/webhooks/${webhook.id}/edit`}>
                        Edit
                      </a>
                    </div>
                    {toggleError?.id === webhook.id && <ErrorNote error={toggleError.error} />}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <Pager
        offset={offset}
        limit={PAGE_SIZE}
        total={total}
        onChange={(next) =>
          navigate(formatRoute(['webhooks'], { q: query, offset: next ? String(next) : '' }))
        }
      />
      {list.length > 0 && (
        <p id="webhooks-caption" class="muted small">
          The last attempt of each webhook, and the share of its attempts that succeeded in the last
          24 hours.
        </p>
      )}
    </Screen>
  );
}
