/**
 * The floor of issue #16's single event end to end, written by hand against Herald's own schema:
 * the least work that stores, matches, delivers and logs one event with the guarantees Herald
 * gives it, measured in the same run as Herald's latency run and counted the same way (CPU of the
 * bench process, poster included, plus its Postgres backends), so that the table shows Herald's
 * CPU per event beside it. And the floor of #16's fan-out (10 webhooks per event, events posted
 * 250 per request): the same idea for a batch, measured beside Herald's fan-out rows (below).
 *
 * Per event, one event per POST /events (the body Herald gets: fixtures.ts's itemEvent):
 * 1. A bare node:http server JSON.parses the body and in ONE statement (one round trip, one
 *    commit, synchronous_commit on) writes the event into `events` and its record into `records`
 *    (an upsert: the event is an update) with its search documents in `record_texts`, the rows
 *    Herald writes for it (the bench's model is not in draft mode: the record is published, so
 *    both its current and published documents; the event's previous_attributes and
 *    record_status too). Then it answers 202 with the id.
 * 2. Right after the commit, in process (no queue, no Redis), ONE statement inserts the call into
 *    this month's partition of `webhook_calls` and sets `events.matched_at`, durable like Herald's createWebhookCalls
 *    (synchronous_commit on for that commit on a pool that has it off).
 * 3. An undici request() POSTs the payload (Herald's default payload keys, padded to the size of
 *    Herald's body) to the webhook's URL on the bench's receiver, through one shared Agent with
 *    Herald's connections per origin, and reads the answer.
 * 4. ONE statement records the outcome: the call updated (status, request and response, last
 *    sent, attempts_count), its row in `webhook_call_attempts` and webhook_call_counts moved
 *    from pending to the outcome, on the workers' pool (synchronous_commit off, as
 *    DELIVERY_SYNCHRONOUS_COMMIT's default). Like Herald's outcome write, it goes to the call's
 *    month's partitions directly (the month is in the call id, migration 021) and counts the
 *    call itself: through the partitioned parents a generic plan locks every month and every
 *    index of each, and the count trigger builds transition tables. The call's insert (step 2)
 *    goes to this month's partition and counts the call, as Herald's match does.
 * Each pays every index and trigger of the table it writes: the floor of this schema's work.
 *
 * Fan-out (fanOutRun): POSTs of several events (run.ts posts 250 per request, 2 in flight, as it
 * does to Herald), each event of a model with 10 webhooks on its event type (the bench's
 * `b-<m>-<k>` on publish events):
 * 1. ONE statement per request (one commit, synchronous_commit on) stores all its events, their
 *    records (upserts) and both documents of each (the statement of step 1 over a recordset, as
 *    Herald's herald_write_item_batch does), then the 202 with each event's status.
 * 2. Right after that commit, ONE statement for the request inserts every call (event × webhook
 *    of its model and event type) into this month's partition, counts them (one count per key,
 *    in key order, as Herald's createWebhookCalls) and marks the events matched; durable as in
 *    step 2 above.
 * 3. Each call's payload (as in step 3 above, its own call id and webhook id) is POSTed through
 *    the same shared Agent, at most `connections` requests in flight in all (the raw undici
 *    baseline's count, Herald's connections per origin), in the order the calls were made.
 * 4. The outcomes are written in batches, with the limits of Herald's workers' BatchWriter (at
 *    most 2 statements in flight, up to 500 calls each, one month's partitions each); the
 *    outcomes finished in one tick of the event loop wait for each other, ONE statement per
 *    batch updating its calls, inserting their attempt rows and moving their counts (summed by
 *    key, in key order) from pending to the outcome; synchronous_commit off, as step 4 above.
 *
 * Left out: validation (of the body, the models, the fields), the token lookup (the header is
 * compared with the one token), the queue and the sweeper's safety net (a crash between 1 and 2
 * leaves the event unmatched, with nothing to pick it up), leases, retries and the circuit
 * breaker, the webhooks' stats rollups, signing, rate limits, metrics, logs and flow control;
 * the webhooks and models are read once at start, and the match is a Map lookup by model and
 * event type (the bench's webhooks each name one model; a webhook disabled meanwhile is not
 * seen), with no lock on the events (nothing else matches them). In the fan-out besides: no
 * in-flight limit per webhook or per origin beyond the Agent's sockets, no render per model or
 * per payload version (one payload shape), no backpressure from the outcome writes to the
 * requests (an answered call frees its slot before its outcome is written), and a request that
 * names one record twice fails as a whole (500: the upsert cannot touch a row twice in one
 * statement; Herald takes such requests another way). Kept: the event, its record and texts
 * durable before the 202; a repeated event id answered `duplicate` and not delivered again; a
 * stale update (older than the stored record, or than its deletion) not applied; the call logged
 * durably before its request goes; every outcome logged with the request and response.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { callPartition } from '@herald/store';
import { Agent, request } from 'undici';
import { backendPids, cpuPer, sampleCpu } from '../lib/cpu.js';
import type { ReceiverProcess } from '../lib/receiver-process.js';

export interface FloorOptions {
  connectionString: string;
  /** Herald's schema in the bench's database (testDb.schema). */
  schema: string;
  /** The bearer token the poster sends. */
  token: string;
  /** The bench's receiver (the HTTP floor's runs); a broker floor (`publish`) has none. */
  receiver?: ReceiverProcess;
  /**
   * A broker destination's floor (bench/delivery/destinations.ts): step 3 publishes each call's
   * body with these headers through this publisher (resolving on the broker's acknowledgement)
   * instead of POSTing it; `publishRun` measures it.
   */
  publish?: {
    send(message: { body: string; headers: Record<string, string> }): Promise<void>;
    headers: Record<string, string>;
    /** What the call log records as the call's URL (the destination, redacted). */
    url: string;
  };
  /** The webhooks the floor delivers to, by name (SQL LIKE patterns); default `a-%` and `b-%`. */
  webhookNames?: readonly string[];
  /** The size of Herald's request body: the floor's payload is padded to it. */
  bodyBytes: number;
  /** Sockets to the receiver (Herald's DELIVERY_CONNECTIONS_PER_ORIGIN). */
  connections: number;
  /** The workers' pool size (Herald's DB_POOL_SIZE); the ingest pool has 10, as the bench's. */
  poolSize: number;
  /** The latency run's pace and length (latencyRun; the HTTP floor's). */
  latency?: {
    rate: number;
    seconds: number;
    warmupSeconds: number;
    /**
     * The latency run's poster (run.ts): `count` one-event POST /events to `url` at the paced
     * rate, telling `onSend` each record id as its POST goes; the times to the 202 (ms), sorted.
     */
    post: (
      url: string,
      count: number,
      prefix: string,
      onSend: (recordId: string) => void,
    ) => Promise<number[]>;
  };
  /** The fan-out run's poster (run.ts's postInBatches): `events` POSTed to `url` in batches. */
  postBatches: (url: string, events: unknown[]) => Promise<void>;
}

export interface FloorRun {
  total: number;
  received: number;
  /** POST sent → delivery received, ms. */
  p50: number;
  p99: number;
  /** POST sent → 202 received, ms. */
  accepted: { p50: number; p99: number };
  /** CPU ms per 1000 events: the bench process, its Postgres backends (and by pool). */
  cpuPer1000: { bench: number; postgres: number; ingest: number; workers: number };
  /** Attempts that failed or errors on the way (0 in a clean run). */
  failures: number;
}

/** A fan-out run, counted as run.ts's run() counts Herald's throughput rows. */
export interface FloorFanOutRun {
  /** Deliveries expected (events × their webhooks), all counted by the receiver. */
  count: number;
  /** First POST sent → every POST answered, s. */
  posted: number;
  /** First POST sent → the receiver counted the last delivery, s. */
  seconds: number;
  /**
   * CPU ms per 1000 deliveries over `seconds`: the bench process (poster, server, client), its
   * Postgres backends (and by pool), the receiver.
   */
  cpuPer1000: {
    bench: number;
    postgres: number;
    ingest: number;
    workers: number;
    receiver: number;
  };
  /** Attempts that failed or errors on the way (0 in a clean run). */
  failures: number;
}

/** A broker floor's run (publishRun): counted as destinations.ts counts Herald's. */
interface FloorPublishRun {
  count: number;
  /** First POST sent → every outcome recorded, s. */
  seconds: number;
  /** CPU ms per message: the bench process (poster, server, publisher), its Postgres backends. */
  cpu: { bench: number; postgres: number };
  failures: number;
}

/** An item event as the bench posts it (fixtures.ts's itemEvent). */
interface ItemEvent {
  id: string;
  attributes: {
    entity_type: string;
    event_type: string;
    occurred_at?: string;
    entity: {
      id: string;
      attributes: { title: string; body: string };
      relationships: { item_type: { data: { id: string } } };
    };
  };
}

/** A webhook's filter (contract's WebhookEventEntry): the bench's name the models. */
interface WebhookFilter {
  entity_type: string;
  entity_ids?: string[];
}

interface Webhook {
  id: string;
  /** `<event type> <model id>`: the events it gets (the bench's webhooks each name one model). */
  key: string;
  url: string;
  headers: Record<string, string>;
  /** The headers as the call log stores them (credentials redacted), JSON. */
  redacted: string;
}

/**
 * A record's upsert, as Herald's writes it for an item event of the bench (a published record):
 * a later stored version (updated_at, version_key) is not overwritten.
 */
const RECORD_UPSERT = `ON CONFLICT (environment, id) DO UPDATE SET item_type_id = EXCLUDED.item_type_id,
      status = 'published', current_attributes = EXCLUDED.current_attributes,
      published_attributes = EXCLUDED.published_attributes, updated_at = EXCLUDED.updated_at,
      published_at = EXCLUDED.published_at,
      first_published_at = coalesce(r.first_published_at, EXCLUDED.first_published_at),
      version_key = EXCLUDED.version_key, last_event_id = EXCLUDED.last_event_id,
      last_event_type = EXCLUDED.last_event_type
    WHERE (r.updated_at, r.version_key COLLATE "C") <= (EXCLUDED.updated_at, EXCLUDED.version_key)`;

/** Step 1: the event, its record and the record's documents, one statement. */
const STORE = `WITH prev AS (
    SELECT current_attributes FROM records WHERE environment = $2 AND id = $5 AND NOT is_block
  ), ev AS (
    INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
      entity_id, item_type_id, item_type_api_key, occurred_at, entity, previous_attributes,
      record_status)
    VALUES ($1, $2, true, $3, $4, $5, $6, $7, $8::timestamptz, $9::jsonb,
      coalesce((SELECT current_attributes FROM prev), '{}'), 'published')
    ON CONFLICT (id) DO NOTHING
    RETURNING id
  ), rec AS (
    INSERT INTO records AS r (environment, id, item_type_id, status, current_attributes,
      published_attributes, created_at, updated_at, published_at, first_published_at,
      version_key, last_event_id, last_event_type)
    SELECT $2, $5, $6, 'published', $10::jsonb, $10::jsonb, $8, $8, $8, $8, '', ev.id, $4
    FROM ev
    WHERE NOT EXISTS (SELECT 1 FROM record_tombstones t WHERE t.environment = $2 AND t.id = $5
      AND (t.updated_at, t.version_key COLLATE "C") > ($8::timestamptz, ''))
    ${RECORD_UPSERT}
    RETURNING r.id
  ), txt AS (
    INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
    SELECT $2, rec.id, v.version, $11, $6, to_tsvector($12::regconfig, $13)
    FROM rec CROSS JOIN (VALUES ('current'), ('published')) AS v (version)
    ON CONFLICT (environment, record_id, version, locale) DO UPDATE SET
      item_type_id = EXCLUDED.item_type_id, document = EXCLUDED.document
  )
  SELECT count(*)::int AS inserted FROM ev`;

/**
 * Step 2, on this month's partition (`2026_11`), as Herald's match writes it: the call, counted
 * as pending, and the event matched; durable (synchronous_commit on for this commit).
 */
const matchSql = (month: string) => `WITH c AS (
    INSERT INTO webhook_calls_${month} (event_id, webhook_id, entity_type, event_type)
    VALUES ($1, $2, $3, $4)
    RETURNING id, webhook_id, entity_type, event_type, created_at
  ), counted AS MATERIALIZED (
    SELECT herald_add_webhook_call_count(c.webhook_id, c.entity_type, c.event_type, 'pending',
      date_trunc('month', c.created_at AT TIME ZONE 'UTC')::date, 1)
    FROM c
  ), m AS (
    UPDATE events SET matched_at = now() WHERE id = $1
  )
  SELECT c.id, set_config('synchronous_commit', 'on', true) AS durable,
    (SELECT count(*) FROM counted) AS counted
  FROM c`;

/**
 * Step 4, on the partitions of `month` (`2026_11`): the outcome on the call, its attempt row, and
 * the call's count moved from pending (the floor made it and nothing else touches it) to `$2`.
 */
const outcomeSql = (month: string) => `WITH c AS (
    UPDATE webhook_calls_${month} SET status = $2, request_url = $3, request_headers = $4::json,
      request_payload = $5, response_status = $6, response_headers = $7::json,
      response_payload = $8, failure_reason = $9, last_sent_at = $10,
      attempts_count = attempts_count + 1
    WHERE id = $1
    RETURNING id, attempts_count, webhook_id, entity_type, event_type, created_at
  ), a AS (
    INSERT INTO webhook_call_attempts_${month} (call_id, number, trigger, outcome, started_at,
      duration_ms, request_url, request_headers, response_status, response_headers,
      response_payload, failure_reason)
    SELECT c.id, c.attempts_count, 'first', $2, $10, $11, $3, $4::json, $6, $7::json, $8, $9
    FROM c
  ), counted AS MATERIALIZED (
    SELECT herald_add_webhook_call_count(c.webhook_id, c.entity_type, c.event_type, s.status,
      date_trunc('month', c.created_at AT TIME ZONE 'UTC')::date, s.delta)
    FROM c CROSS JOIN (VALUES ('pending', -1::bigint), ($2::text, 1::bigint)) AS s (status, delta)
  )
  SELECT count(*) AS counted FROM counted`;

/**
 * Fan-out step 1: the events of a request (a recordset: `n` keeps the request's order), their
 * records and both documents of each, one statement; the ids inserted (the others: duplicates).
 * STORE's work over a recordset: each event's previous_attributes from the record as stored
 * before the statement (its published version for a publish), its record upserted unless stale,
 * the documents of the records written. The bench's models are not in draft mode: published.
 */
const STORE_BATCH = `WITH x AS MATERIALIZED (
    SELECT * FROM json_to_recordset($1::json) AS x(n integer, id text, entity_type text,
      event_type text, entity_id text, item_type_id text, item_type_api_key text,
      occurred_at timestamptz, entity jsonb)
  ), ev AS (
    INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
      entity_id, item_type_id, item_type_api_key, occurred_at, entity, previous_attributes,
      record_status)
    SELECT x.id, $2, true, x.entity_type, x.event_type, x.entity_id, x.item_type_id,
      x.item_type_api_key, x.occurred_at, x.entity,
      coalesce(CASE WHEN x.event_type IN ('publish', 'unpublish') THEN p.published_attributes
        ELSE p.current_attributes END, '{}'), 'published'
    FROM x LEFT JOIN records p ON p.environment = $2 AND p.id = x.entity_id AND NOT p.is_block
    ORDER BY x.n
    ON CONFLICT (id) DO NOTHING
    RETURNING id
  ), y AS (
    SELECT x.*, x.entity->'attributes' AS attrs FROM x WHERE x.id IN (SELECT id FROM ev)
  ), rec AS (
    INSERT INTO records AS r (environment, id, item_type_id, status, current_attributes,
      published_attributes, created_at, updated_at, published_at, first_published_at,
      version_key, last_event_id, last_event_type)
    SELECT $2, y.entity_id, y.item_type_id, 'published', y.attrs, y.attrs, y.occurred_at,
      y.occurred_at, y.occurred_at, y.occurred_at, '', y.id, y.event_type
    FROM y
    WHERE NOT EXISTS (SELECT 1 FROM record_tombstones t WHERE t.environment = $2
      AND t.id = y.entity_id AND (t.updated_at, t.version_key COLLATE "C") > (y.occurred_at, ''))
    ORDER BY y.n
    ${RECORD_UPSERT}
    RETURNING r.id, r.item_type_id, r.current_attributes
  ), doc AS (
    -- OFFSET 0 keeps the subquery apart: one to_tsvector per record, not per version.
    SELECT rec.id, rec.item_type_id, d.document FROM rec
    CROSS JOIN LATERAL (SELECT to_tsvector($4::regconfig,
      concat_ws(E'\\n', rec.current_attributes->>'title', rec.current_attributes->>'body'))
      AS document OFFSET 0) d
  ), txt AS (
    INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
    SELECT $2, doc.id, v.version, $3, doc.item_type_id, doc.document
    FROM doc CROSS JOIN (VALUES ('current'), ('published')) AS v (version)
    ON CONFLICT (environment, record_id, version, locale) DO UPDATE SET
      item_type_id = EXCLUDED.item_type_id, document = EXCLUDED.document
  )
  SELECT id FROM ev`;

/**
 * Fan-out step 2, on this month's partition (`2026_11`): the calls of a request's events (arrays
 * of event id, webhook id, entity type, event type, in the order they are made), counted as
 * pending once per key, and the events (`$5`) matched; durable (synchronous_commit on for this
 * commit, when calls were made).
 */
const matchBatchSql = (month: string) => `WITH c AS (
    INSERT INTO webhook_calls_${month} (event_id, webhook_id, entity_type, event_type)
    SELECT x.e, x.w, x.t, x.v
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY
      AS x (e, w, t, v, n)
    ORDER BY x.n
    RETURNING id, event_id, webhook_id, entity_type, event_type, created_at
  ), counted AS MATERIALIZED (
    SELECT herald_add_webhook_call_count(k.webhook_id, k.entity_type, k.event_type, 'pending',
      k.month, k.calls)
    FROM (
      SELECT webhook_id, entity_type, event_type,
        date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, count(*) AS calls
      FROM c GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4) k
  ), m AS (
    UPDATE events SET matched_at = now() WHERE id = ANY($5::text[])
  )
  SELECT c.id, c.event_id, c.webhook_id, set_config('synchronous_commit', 'on', true) AS durable,
    (SELECT count(*) FROM counted) AS counted
  FROM c ORDER BY c.id`;

/**
 * Fan-out step 4, on the partitions of `month`: the outcomes of a batch of calls (arrays, one
 * element per call), each call updated, its attempt row inserted, and the counts moved from
 * pending (the floor made the calls and nothing else touches them) to the outcome, summed by key
 * and taken in key order (two batches in flight never wait for each other in a circle).
 */
const outcomeBatchSql = (month: string) => `WITH v AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
      $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[], $11::float8[])
      AS v (id, status, request_url, request_headers, request_payload, response_status,
        response_headers, response_payload, failure_reason, last_sent_at, duration_ms)
  ), c AS (
    UPDATE webhook_calls_${month} AS c SET status = v.status, request_url = v.request_url,
      request_headers = v.request_headers::json, request_payload = v.request_payload,
      response_status = v.response_status, response_headers = v.response_headers::json,
      response_payload = v.response_payload, failure_reason = v.failure_reason,
      last_sent_at = v.last_sent_at, attempts_count = c.attempts_count + 1
    FROM v WHERE c.id = v.id
    RETURNING c.id, c.attempts_count, c.webhook_id, c.entity_type, c.event_type, c.created_at,
      c.status
  ), a AS (
    INSERT INTO webhook_call_attempts_${month} (call_id, number, trigger, outcome, started_at,
      duration_ms, request_url, request_headers, response_status, response_headers,
      response_payload, failure_reason)
    SELECT c.id, c.attempts_count, 'first', v.status, v.last_sent_at, v.duration_ms,
      v.request_url, v.request_headers::json, v.response_status, v.response_headers::json,
      v.response_payload, v.failure_reason
    FROM c JOIN v ON v.id = c.id
  ), counted AS MATERIALIZED (
    SELECT herald_add_webhook_call_count(k.webhook_id, k.entity_type, k.event_type, k.status,
      k.month, k.calls)
    FROM (
      SELECT c.webhook_id, c.entity_type, c.event_type, s.status,
        date_trunc('month', c.created_at AT TIME ZONE 'UTC')::date AS month,
        sum(s.delta)::bigint AS calls
      FROM c CROSS JOIN LATERAL (VALUES ('pending', -1), (c.status, 1)) AS s (status, delta)
      GROUP BY 1, 2, 3, 4, 5 HAVING sum(s.delta) <> 0 ORDER BY 1, 2, 3, 4, 5) k
  )
  SELECT count(*) AS counted FROM counted`;

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

const now = () => performance.timeOrigin + performance.now();

/** The floor, started: its server listening, its pools and agent open. */
export interface Floor {
  latencyRun(): Promise<FloorRun>;
  /**
   * `events` posted in batches (FloorOptions.postBatches), `expected` deliveries (events × their
   * webhooks): from the first POST until the receiver counted them all, as run.ts's run().
   */
  fanOutRun(events: unknown[], expected: number): Promise<FloorFanOutRun>;
  /**
   * A broker floor's run (FloorOptions.publish): `events` posted in batches, from the first POST
   * until every call's outcome is recorded.
   */
  publishRun(events: unknown[]): Promise<FloorPublishRun>;
  /** Waits for the events still in flight, then closes the server, the agent and the pools. */
  close(): Promise<void>;
}

const receiverOf = (options: FloorOptions): ReceiverProcess => {
  if (!options.receiver) throw new Error('this run of the floor needs the bench receiver');
  return options.receiver;
};

/** Reads the bench's environment, models and webhooks, and starts the floor's server. */
export async function startFloor(options: FloorOptions): Promise<Floor> {
  const { connectionString, schema } = options;
  const pool = (name: string, max: number, synchronousCommit: boolean) => {
    const p = new pg.Pool({
      connectionString,
      max,
      // `<schema>-floor…`: backendPids finds them. Herald's rows count `<schema>…` backends, which
      // these are, but only while the floor runs (they are closed before Herald's next run).
      application_name: `${schema}-${name}`,
      // Connections stay open: a backend that exits during a run would take its CPU off the count.
      idleTimeoutMillis: 0,
      options: `-c search_path=${schema}${synchronousCommit ? '' : ' -c synchronous_commit=off'}`,
    });
    p.on('error', () => undefined);
    return p;
  };
  const ingest = pool('floor', 10, true);
  const workers = pool('floor-workers', options.poolSize, false);
  const { rows: environments } = await ingest.query<{ id: string; locales: string[] }>(
    'SELECT id, locales FROM environments WHERE is_primary',
  );
  const environment = environments[0]!;
  // The bench's environment has one locale, `en` (store's textSearchConfig: english).
  const locale = environment.locales[0]!;
  const searchConfig = locale.startsWith('en') ? 'english' : 'simple';
  const { rows: models } = await ingest.query<{ id: string; api_key: string }>(
    'SELECT id, api_key FROM item_types WHERE environment = $1',
    [environment.id],
  );
  const apiKeys = new Map(models.map((m) => [m.id, m.api_key]));
  // The bench's webhooks: `a-<m>` (update events of items of model-<m>, one per model) and
  // `b-<m>-<k>` (publish events of items of model-<m>, 10 per model), by the events they get.
  const { rows: hooks } = await ingest.query<{
    id: string;
    url: string;
    headers: Record<string, string>;
    events: { entity_type: string; event_types: string[]; filters?: WebhookFilter[] }[];
    http_basic_user: string | null;
    http_basic_password: string | null;
  }>(
    `SELECT id, url, headers, events, http_basic_user, http_basic_password FROM webhooks
     WHERE name LIKE ANY($1) AND enabled ORDER BY id`,
    [options.webhookNames ?? ['a-%', 'b-%']],
  );
  /** The webhooks by `<event type> <model id>` (Webhook.key), and by id. */
  const webhooks = new Map<string, Webhook[]>();
  const webhooksById = new Map<string, Webhook>();
  for (const hook of hooks) {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'herald-floor',
      ...hook.headers,
    };
    const redacted = { ...headers };
    if (hook.http_basic_user !== null) {
      const credentials = `${hook.http_basic_user}:${hook.http_basic_password ?? ''}`;
      headers['authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
      redacted['authorization'] = '***';
    }
    for (const entry of hook.events) {
      if (entry.entity_type !== 'item') continue;
      const models =
        entry.filters?.find((f) => f.entity_type === 'item_type')?.entity_ids ?? ([] as string[]);
      for (const eventType of entry.event_types) {
        for (const model of models) {
          const webhook: Webhook = {
            id: hook.id,
            key: `${eventType} ${model}`,
            url: hook.url,
            headers,
            redacted: JSON.stringify(redacted),
          };
          webhooks.set(webhook.key, [...(webhooks.get(webhook.key) ?? []), webhook]);
          webhooksById.set(hook.id, webhook);
        }
      }
    }
  }
  const agent = new Agent({ connections: options.connections, keepAliveTimeout: 60_000 });
  const authorization = `Bearer ${options.token}`;
  /** Every event's (or request's) steps 2–4 still running (a run ends once they are all done). */
  const pending = new Set<Promise<void>>();
  let failures = 0;
  const track = (work: Promise<void>) => {
    const tracked = work.catch(() => {
      failures++;
    });
    pending.add(tracked);
    void tracked.finally(() => pending.delete(tracked));
  };
  // The month of now (the bench does not run across a month's turn).
  const thisMonth = () => new Date().toISOString().slice(0, 7).replace('-', '_');

  /** A call's body: Herald's default payload keys, padded to Herald's body size when shorter. */
  const bodyOf = (callId: string, webhook: Webhook, event: ItemEvent, occurredAt: string) => {
    const { entity_type: entityType, event_type: eventType, entity } = event.attributes;
    const payload = {
      webhook_call_id: callId,
      event_triggered_at: occurredAt,
      attempted_auto_retries_count: 0,
      webhook_id: webhook.id,
      site_id: 'bench',
      environment: environment.id,
      is_environment_primary: true,
      entity_type: entityType,
      event_type: eventType,
      entity,
      related_entities: [] as unknown[],
    };
    const body = JSON.stringify(payload);
    // About the same size already: ~940 B with these ids.
    const short = options.bodyBytes - Buffer.byteLength(body) - ',"pad":""'.length;
    return short > 0 ? JSON.stringify({ ...payload, pad: ' '.repeat(short) }) : body;
  };

  /** A call's outcome as its log takes it. */
  interface Outcome {
    callId: string;
    status: 'success' | 'failed';
    url: string;
    headers: string;
    body: string;
    responseStatus: number | null;
    responseHeaders: string | null;
    responseBody: string | null;
    failure: string | null;
    sentAt: Date;
    durationMs: number;
  }

  /** A broker floor's step 3: publishes `body`, awaiting the broker's acknowledgement. */
  const publish = async (
    callId: string,
    to: NonNullable<FloorOptions['publish']>,
    body: string,
  ): Promise<Outcome> => {
    const sentAt = new Date();
    const started = performance.now();
    const headers = { ...to.headers, 'webhook-id': callId };
    let failure: string | null = null;
    try {
      await to.send({ body, headers });
    } catch (error) {
      failure = (error as Error).message;
      failures++;
    }
    return {
      callId,
      status: failure === null ? 'success' : 'failed',
      url: to.url,
      headers: JSON.stringify(headers),
      body,
      responseStatus: null,
      responseHeaders: null,
      responseBody: null,
      failure,
      sentAt,
      durationMs: performance.now() - started,
    };
  };

  /** Step 3: POSTs `body` to the webhook and reads the answer (a broker floor: publishes it). */
  const send = async (callId: string, webhook: Webhook, body: string): Promise<Outcome> => {
    if (options.publish) return publish(callId, options.publish, body);
    const sentAt = new Date();
    const started = performance.now();
    let status: number | null = null;
    let responseHeaders: string | null = null;
    let responseBody: string | null = null;
    let failure: string | null = null;
    try {
      const response = await request(webhook.url, {
        method: 'POST',
        dispatcher: agent,
        headers: webhook.headers,
        body,
      });
      responseBody = await response.body.text();
      status = response.statusCode;
      responseHeaders = JSON.stringify(response.headers);
    } catch (error) {
      failure = (error as Error).message;
    }
    const ok = status !== null && status >= 200 && status < 300;
    if (!ok) failures++;
    return {
      callId,
      status: ok ? 'success' : 'failed',
      url: webhook.url,
      headers: webhook.redacted,
      body,
      responseStatus: status,
      responseHeaders,
      responseBody,
      failure,
      sentAt,
      durationMs: performance.now() - started,
    };
  };

  /** Steps 2–4 of one stored event (one webhook: the bench's one per model for its updates). */
  const deliver = async (event: ItemEvent, occurredAt: string): Promise<void> => {
    const { entity_type: entityType, event_type: eventType, entity } = event.attributes;
    const webhook = webhooks.get(`${eventType} ${entity.relationships.item_type.data.id}`)?.[0];
    if (!webhook) return;
    const month = thisMonth();
    const { rows } = await workers.query<{ id: string }>({
      name: `floor.match.${month}`,
      text: matchSql(month),
      values: [event.id, webhook.id, entityType, eventType],
    });
    const callId = rows[0]!.id;
    const o = await send(callId, webhook, bodyOf(callId, webhook, event, occurredAt));
    const callsMonth = callPartition(callId);
    await workers.query({
      name: `floor.outcome.${callsMonth}`,
      text: outcomeSql(callsMonth),
      values: [
        o.callId,
        o.status,
        o.url,
        o.headers,
        o.body,
        o.responseStatus,
        o.responseHeaders,
        o.responseBody,
        o.failure,
        o.sentAt,
        o.durationMs,
      ],
    });
  };

  // Fan-out step 3's limit: requests in flight in all, the others waiting in order.
  let sending = 0;
  const slots: (() => void)[] = [];
  const acquire = (): Promise<void> => {
    if (sending < options.connections) {
      sending++;
      return Promise.resolve();
    }
    return new Promise((resolve) => slots.push(resolve));
  };
  const release = () => {
    const next = slots.shift();
    if (next) next();
    else sending--;
  };

  // Fan-out step 4: outcomes written in batches (BatchWriter's limits: ≤ 2 statements in flight,
  // ≤ 500 calls each), those finished in one tick together.
  const OUTCOMES_IN_FLIGHT = 2;
  const OUTCOMES_PER_STATEMENT = 500;
  let outcomes: { outcome: Outcome; done: () => void; failed: (error: unknown) => void }[] = [];
  let writing = 0;
  let scheduled = false;
  const writeOutcomes = async (batch: Outcome[], month: string) => {
    await workers.query({
      name: `floor.outcomes.${month}`,
      text: outcomeBatchSql(month),
      values: [
        batch.map((o) => o.callId),
        batch.map((o) => o.status),
        batch.map((o) => o.url),
        batch.map((o) => o.headers),
        batch.map((o) => o.body),
        batch.map((o) => o.responseStatus),
        batch.map((o) => o.responseHeaders),
        batch.map((o) => o.responseBody),
        batch.map((o) => o.failure),
        batch.map((o) => o.sentAt),
        batch.map((o) => o.durationMs),
      ],
    });
  };
  const pumpOutcomes = () => {
    scheduled = false;
    while (writing < OUTCOMES_IN_FLIGHT && outcomes.length > 0) {
      // One month's calls per statement (its partitions): the first waiting outcome's month.
      const month = callPartition(outcomes[0]!.outcome.callId);
      const batch: typeof outcomes = [];
      const rest: typeof outcomes = [];
      for (const item of outcomes) {
        if (batch.length < OUTCOMES_PER_STATEMENT && callPartition(item.outcome.callId) === month) {
          batch.push(item);
        } else rest.push(item);
      }
      outcomes = rest;
      writing++;
      writeOutcomes(
        batch.map((item) => item.outcome),
        month,
      )
        .then(
          () => batch.forEach((item) => item.done()),
          (error: unknown) => batch.forEach((item) => item.failed(error)),
        )
        .finally(() => {
          writing--;
          pumpOutcomes();
        });
    }
  };
  const recordOutcome = (outcome: Outcome) =>
    new Promise<void>((done, failed) => {
      outcomes.push({ outcome, done, failed });
      if (!scheduled) {
        scheduled = true;
        setImmediate(pumpOutcomes);
      }
    });

  /** Fan-out steps 2–4 of a request's stored events. */
  const deliverBatch = async (
    events: { event: ItemEvent; occurredAt: string }[],
  ): Promise<void> => {
    const byId = new Map(events.map((e) => [e.event.id, e]));
    const eventIds: string[] = [];
    const webhookIds: string[] = [];
    const entityTypes: string[] = [];
    const eventTypes: string[] = [];
    for (const { event } of events) {
      const { entity_type: entityType, event_type: eventType, entity } = event.attributes;
      for (const webhook of webhooks.get(
        `${eventType} ${entity.relationships.item_type.data.id}`,
      ) ?? []) {
        eventIds.push(event.id);
        webhookIds.push(webhook.id);
        entityTypes.push(entityType);
        eventTypes.push(eventType);
      }
    }
    const month = thisMonth();
    const { rows } = await workers.query<{ id: string; event_id: string; webhook_id: string }>({
      name: `floor.match.batch.${month}`,
      text: matchBatchSql(month),
      values: [eventIds, webhookIds, entityTypes, eventTypes, [...byId.keys()]],
    });
    await Promise.all(
      rows.map(async (row) => {
        const webhook = webhooksById.get(row.webhook_id)!;
        const { event, occurredAt } = byId.get(row.event_id)!;
        await acquire();
        let outcome: Outcome;
        try {
          outcome = await send(row.id, webhook, bodyOf(row.id, webhook, event, occurredAt));
        } finally {
          release();
        }
        await recordOutcome(outcome);
      }),
    );
  };

  /** Fan-out step 1, then the 202, then steps 2–4 (tracked until done). */
  const acceptBatch = async (events: ItemEvent[], res: ServerResponse): Promise<void> => {
    const stored = events.map((event) => ({
      event,
      occurredAt: event.attributes.occurred_at ?? new Date().toISOString(),
    }));
    const { rows } = await ingest.query<{ id: string }>({
      name: 'floor.store.batch',
      text: STORE_BATCH,
      values: [
        JSON.stringify(
          stored.map(({ event, occurredAt }, n) => {
            const model = event.attributes.entity.relationships.item_type.data.id;
            return {
              n,
              id: event.id,
              entity_type: event.attributes.entity_type,
              event_type: event.attributes.event_type,
              entity_id: event.attributes.entity.id,
              item_type_id: model,
              item_type_api_key: apiKeys.get(model) ?? null,
              occurred_at: occurredAt,
              entity: event.attributes.entity,
            };
          }),
        ),
        environment.id,
        locale,
        searchConfig,
      ],
    });
    const inserted = new Set(rows.map((row) => row.id));
    const answer = JSON.stringify({
      data: events.map((event) => ({
        type: 'event',
        id: event.id,
        attributes: { status: inserted.has(event.id) ? 'accepted' : 'duplicate' },
      })),
    });
    res.writeHead(202, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(answer),
    });
    res.end(answer);
    const fresh = stored.filter(({ event }) => inserted.has(event.id));
    if (fresh.length > 0) track(deliverBatch(fresh));
  };

  /**
   * Step 1, then the 202, then steps 2–4 (tracked until done); a request of several events takes
   * the fan-out's way (acceptBatch).
   */
  const accept = async (raw: string, res: ServerResponse): Promise<void> => {
    const events = (JSON.parse(raw) as { data: ItemEvent[] }).data;
    if (events.length !== 1) return acceptBatch(events, res);
    const event = events[0]!;
    const { entity } = event.attributes;
    const model = entity.relationships.item_type.data.id;
    const occurredAt = event.attributes.occurred_at ?? new Date().toISOString();
    const { rows } = await ingest.query<{ inserted: number }>({
      name: 'floor.store',
      text: STORE,
      values: [
        event.id,
        environment.id,
        event.attributes.entity_type,
        event.attributes.event_type,
        entity.id,
        model,
        apiKeys.get(model) ?? null,
        occurredAt,
        JSON.stringify(entity),
        JSON.stringify(entity.attributes),
        locale,
        searchConfig,
        `${entity.attributes.title}\n${entity.attributes.body}`,
      ],
    });
    const accepted = rows[0]!.inserted > 0;
    const answer = JSON.stringify({
      data: [
        {
          type: 'event',
          id: event.id,
          attributes: { status: accepted ? 'accepted' : 'duplicate' },
        },
      ],
    });
    res.writeHead(202, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(answer),
    });
    res.end(answer);
    if (accepted) track(deliver(event, occurredAt));
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/events') {
      res.writeHead(404).end();
      req.resume();
      return;
    }
    if (req.headers.authorization !== authorization) {
      res.writeHead(401).end();
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      accept(Buffer.concat(chunks).toString('utf8'), res).catch((error: unknown) => {
        failures++;
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  /** Resolves once every event posted so far has its outcome recorded. */
  const drain = async () => {
    while (pending.size > 0) await Promise.all([...pending]);
  };

  return {
    /**
     * A latency run as run.ts's latencyRun does it: a warm-up at the rate (unmeasured), then
     * `rate × seconds` one-event POSTs, latency from POST sent to arrival at the receiver; CPU
     * from the first POST until every delivery arrived and every outcome is recorded.
     */
    async latencyRun(): Promise<FloorRun> {
      const receiver = receiverOf(options);
      if (!options.latency) throw new Error('the latency run needs FloorOptions.latency');
      const { rate, seconds, warmupSeconds, post } = options.latency;
      await post(url, rate * warmupSeconds, 'floorwarm', () => undefined);
      await drain();
      await receiver.mode(true);
      const total = rate * seconds;
      const sent = new Map<string, number>();
      const backends = await backendPids(ingest, `${schema}-floor`);
      failures = 0;
      const before = sampleCpu([receiver.pid], backends);
      const answers = await post(url, total, 'floor', (recordId) => sent.set(recordId, now()));
      let arrivals: [string, number][] = [];
      const deadline = Date.now() + 60_000;
      while (arrivals.length < total && Date.now() < deadline) {
        arrivals = (await receiver.stats()).arrivals;
        if (arrivals.length < total) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await drain();
      // With the backends opened during the run (the pools grow under load): all their CPU.
      const opened = await backendPids(ingest, `${schema}-floor`);
      const after = sampleCpu([receiver.pid], [...new Set([...backends, ...opened])]);
      await receiver.mode(false);
      const cpu = cpuPer(before, after, total / 1000);
      // Postgres's share by pool: the ingest's (step 1), the workers' (steps 2 and 4).
      const workerBackends = new Set(await backendPids(ingest, `${schema}-floor-workers`));
      const byPool = { ingest: 0, workers: 0 };
      for (const [pid, ms] of after.postgresByPid) {
        const used = (ms - (before.postgresByPid.get(pid) ?? 0)) / (total / 1000);
        byPool[workerBackends.has(pid) ? 'workers' : 'ingest'] += used;
      }
      const latencies = arrivals
        .filter(([id]) => sent.has(id))
        .map(([id, at]) => at - sent.get(id)!)
        .sort((a, b) => a - b);
      return {
        total,
        received: latencies.length,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        accepted: { p50: quantile(answers, 0.5), p99: quantile(answers, 0.99) },
        cpuPer1000: { bench: cpu.bench, postgres: cpu.postgres, ...byPool },
        failures,
      };
    },
    async fanOutRun(events: unknown[], expected: number): Promise<FloorFanOutRun> {
      const { postBatches } = options;
      const receiver = receiverOf(options);
      await drain();
      const received = (await receiver.stats()).count;
      const backends = await backendPids(ingest, `${schema}-floor`);
      failures = 0;
      const before = sampleCpu([receiver.pid], backends);
      const started = performance.now();
      await postBatches(url, events);
      const posted = (performance.now() - started) / 1000;
      await receiver.waitFor(received + expected);
      const seconds = (performance.now() - started) / 1000;
      // As Herald's rows: the CPU until the last delivery is counted (outcomes still being
      // written then are not), with the backends opened during the run.
      const opened = await backendPids(ingest, `${schema}-floor`);
      const after = sampleCpu([receiver.pid], [...new Set([...backends, ...opened])]);
      const cpu = cpuPer(before, after, expected / 1000);
      const workerBackends = new Set(await backendPids(ingest, `${schema}-floor-workers`));
      const byPool = { ingest: 0, workers: 0 };
      for (const [pid, ms] of after.postgresByPid) {
        const used = (ms - (before.postgresByPid.get(pid) ?? 0)) / (expected / 1000);
        byPool[workerBackends.has(pid) ? 'workers' : 'ingest'] += used;
      }
      await drain();
      return {
        count: expected,
        posted,
        seconds,
        cpuPer1000: {
          bench: cpu.bench,
          postgres: cpu.postgres,
          ...byPool,
          receiver: cpu.children,
        },
        failures,
      };
    },
    async publishRun(events: unknown[]): Promise<FloorPublishRun> {
      await drain();
      const backends = await backendPids(ingest, `${schema}-floor`);
      failures = 0;
      const before = sampleCpu([], backends);
      const started = performance.now();
      await options.postBatches(url, events);
      await drain();
      const seconds = (performance.now() - started) / 1000;
      const opened = await backendPids(ingest, `${schema}-floor`);
      const after = sampleCpu([], [...new Set([...backends, ...opened])]);
      const cpu = cpuPer(before, after, events.length);
      return {
        count: events.length,
        seconds,
        cpu: { bench: cpu.bench, postgres: cpu.postgres },
        failures,
      };
    },
    async close() {
      await drain();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await agent.close();
      await Promise.all([ingest.end(), workers.end()]);
    },
  };
}
