/**
 * What bench:delivery's rows post and deliver to: models, item events, item webhooks filtered on
 * one model, and the POST /events client (the real ingest app over HTTP).
 */
import type { WebhookEventEntry } from '@herald/contract';
import { randomId, testWebhookInput } from '@herald/testkit';
import { request } from 'undici';

/** POST /events requests in flight at once when posting in batches. */
export const POSTS_IN_FLIGHT = 2;

export function modelEvent(i: number) {
  return {
    type: 'event',
    id: `model-event-${i}`,
    attributes: {
      entity_type: 'item_type',
      event_type: 'create',
      entity: {
        type: 'item_type',
        id: `model-${i}`,
        attributes: { name: `M${i}`, api_key: `m${i}` },
      },
      related_entities: ['title', 'body'].map((apiKey, position) => ({
        type: 'field',
        id: `model-${i}-${apiKey}`,
        attributes: {
          api_key: apiKey,
          field_type: apiKey === 'title' ? 'string' : 'text',
          localized: false,
          label: apiKey,
          position,
        },
      })),
    },
  };
}

const TEXT = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(8);

/**
 * An item event of a record of `model`. With `version`, the record's version n (its title ends
 * in ` v<n>`, meta.current_version n) occurring at `at`: the producer's order of the versions.
 */
export function itemEvent(
  eventType: string,
  model: number,
  recordId: string,
  version?: { n: number; at: Date },
) {
  return {
    type: 'event',
    id: randomId('evt'),
    attributes: {
      entity_type: 'item',
      event_type: eventType,
      ...(version && { occurred_at: version.at.toISOString() }),
      entity: {
        type: 'item',
        id: recordId,
        attributes: {
          title: version ? `Record ${recordId} v${version.n}` : `Record ${recordId}`,
          body: TEXT,
        },
        relationships: { item_type: { data: { type: 'item_type', id: `model-${model}` } } },
        meta: version ? { status: 'draft', current_version: version.n } : { status: 'draft' },
      },
    },
  };
}

/** POST /events did not answer 202. */
class PostEventsError extends Error {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super(`POST /events answered ${status}: ${body.slice(0, 500)}`);
    this.name = 'PostEventsError';
  }
}

export async function postEvents(url: string, token: string, events: unknown[]): Promise<void> {
  const response = await request(`${url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data: events }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 202) throw new PostEventsError(response.statusCode, text);
}

/**
 * Posts the events `batch` per request, POSTS_IN_FLIGHT requests at a time. `retried`: a request
 * answered 500 is sent again (once) and counted there, instead of failing the run: two requests
 * in flight that write the same records can deadlock in Postgres (the ingest logs it on stderr).
 */
export async function postInBatches(
  url: string,
  token: string,
  events: unknown[],
  batch: number,
  retried?: { count: number },
): Promise<void> {
  const batches: unknown[][] = [];
  for (let i = 0; i < events.length; i += batch) batches.push(events.slice(i, i + batch));
  let next = 0;
  const post = async (events: unknown[]) => {
    try {
      await postEvents(url, token, events);
    } catch (error) {
      if (!retried || !(error instanceof PostEventsError) || error.status !== 500) throw error;
      retried.count++;
      await postEvents(url, token, events);
    }
  };
  const loop = async () => {
    while (next < batches.length) await post(batches[next++]!);
  };
  await Promise.all(Array.from({ length: POSTS_IN_FLIGHT }, loop));
}

/** A webhook of `eventTypes` of items of model-<model>, with basic auth and a header. */
export function itemWebhook(
  receiverUrl: string,
  name: string,
  eventTypes: string[],
  model: number,
) {
  const events: WebhookEventEntry[] = [
    {
      entity_type: 'item',
      event_types: eventTypes,
      filters: [{ entity_type: 'item_type', entity_ids: [`model-${model}`] }],
    },
  ];
  return testWebhookInput({
    name,
    url: `${receiverUrl}/hooks/${name}`,
    headers: { 'X-Bench': 'herald' },
    events,
    httpBasicUser: 'bench',
    httpBasicPassword: 'secret',
  });
}
