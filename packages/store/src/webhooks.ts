import { randomBytes } from 'node:crypto';
import type {
  DeliveryOrder,
  Destination,
  DeliveryPolicy,
  WebhookAuth,
  WebhookBatch,
  WebhookEventEntry,
  WebhookTls,
} from '@herald/contract';
import type { Queryable } from './db.js';

/** What a client sets (docs/api.md, The webhook resource), already validated. */
export interface WebhookInput {
  name: string;
  url: string;
  enabled: boolean;
  headers: Record<string, string>;
  events: WebhookEventEntry[];
  customPayload: string | null;
  httpBasicUser: string | null;
  httpBasicPassword: string | null;
  payloadApiVersion: string;
  nestedItemsInPayload: boolean;
  autoRetry: boolean;
  /** Extension: header names (any case) whose values the call log keeps as `***`. */
  redactHeaders: string[];
  /** Extension: the endpoint health policy ({} takes every default). */
  deliveryPolicy: DeliveryPolicy;
  /** Extension: the default payload carries `changes`, a JSON Patch (migration 022). */
  payloadChanges: boolean;
  /**
   * Extension, flow control (migration 023): calls of one entity in event order, or in any
   * (absent: 'any').
   */
  deliveryOrder?: DeliveryOrder;
  /** Extension, flow control: a newer event replaces the payload of a call still waiting. */
  coalesceEvents?: boolean;
  /** Extension, flow control: the events of a window go out as one call (null: one per event). */
  batch?: WebhookBatch | null;
  /**
   * Extension: requests carry the traceparent of their attempt's span (migration 028; absent:
   * true).
   */
  traceContext?: boolean;
  /** Extension: where the calls go (migration 030; absent: HTTP to `url`); credentials included. */
  destination?: Destination;
  /** Extension: OAuth2 client credentials towards the endpoint (migration 031), secret included. */
  auth?: WebhookAuth | null;
  /** Extension: mutual TLS towards the endpoint (migration 031), key included. */
  tls?: WebhookTls | null;
}

/**
 * A stored webhook, secrets included: the HTTP layer decides what to show. Every setting of
 * WebhookInput is there, defaults applied.
 */
export interface WebhookRecord extends Required<WebhookInput> {
  id: string;
  signingSecret: string;
  previousSigningSecret: string | null;
  previousSecretExpiresAt: Date | null;
  disabledReason: string | null;
  /** When it was disabled (null while enabled). */
  disabledAt: Date | null;
  /** Bumped on every update (by a trigger, so no write path can forget it). */
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The columns an update may set, by input key: the only identifiers that reach the SQL text. */
const COLUMNS: Record<keyof WebhookInput, { column: string; json?: true }> = {
  name: { column: 'name' },
  url: { column: 'url' },
  enabled: { column: 'enabled' },
  headers: { column: 'headers', json: true },
  events: { column: 'events', json: true },
  customPayload: { column: 'custom_payload' },
  httpBasicUser: { column: 'http_basic_user' },
  httpBasicPassword: { column: 'http_basic_password' },
  payloadApiVersion: { column: 'payload_api_version' },
  nestedItemsInPayload: { column: 'nested_items_in_payload' },
  autoRetry: { column: 'auto_retry' },
  redactHeaders: { column: 'redact_headers', json: true },
  deliveryPolicy: { column: 'delivery_policy', json: true },
  payloadChanges: { column: 'payload_changes' },
  deliveryOrder: { column: 'delivery_order' },
  coalesceEvents: { column: 'coalesce_events' },
  batch: { column: 'batch', json: true },
  traceContext: { column: 'trace_context' },
  destination: { column: 'destination', json: true },
  auth: { column: 'auth', json: true },
  tls: { column: 'tls', json: true },
};

/** A webhook's columns (qualified by `w.` for a join: see webhook-calls.ts). */
export const WEBHOOK_COLUMNS = `id, name, url, enabled, headers, events, custom_payload, http_basic_user,
  http_basic_password, payload_api_version, nested_items_in_payload, auto_retry, redact_headers,
  delivery_policy, payload_changes, delivery_order, coalesce_events, batch, trace_context, destination, auth, tls, signing_secret, previous_signing_secret, previous_secret_expires_at, disabled_reason, disabled_at, version, created_at, updated_at`;
const SELECT = `SELECT ${WEBHOOK_COLUMNS}`;
const RETURNING = SELECT.replace(/^SELECT/, 'RETURNING');

export interface WebhookRow extends Record<string, unknown> {
  headers: Record<string, string>;
  events: WebhookEventEntry[];
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  custom_payload: string | null;
  http_basic_user: string | null;
  http_basic_password: string | null;
  payload_api_version: string;
  nested_items_in_payload: boolean;
  auto_retry: boolean;
  redact_headers: string[];
  delivery_policy: DeliveryPolicy;
  payload_changes: boolean;
  delivery_order: DeliveryOrder;
  coalesce_events: boolean;
  batch: WebhookBatch | null;
  trace_context: boolean;
  destination: Destination;
  auth: WebhookAuth | null;
  tls: WebhookTls | null;
  signing_secret: string;
  previous_signing_secret: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  disabled_at: Date | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export const toWebhook = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  name: row.name,
  url: row.url,
  enabled: row.enabled,
  headers: row.headers,
  events: row.events,
  customPayload: row.custom_payload,
  httpBasicUser: row.http_basic_user,
  httpBasicPassword: row.http_basic_password,
  payloadApiVersion: row.payload_api_version,
  nestedItemsInPayload: row.nested_items_in_payload,
  autoRetry: row.auto_retry,
  redactHeaders: row.redact_headers,
  deliveryPolicy: row.delivery_policy,
  payloadChanges: row.payload_changes,
  deliveryOrder: row.delivery_order,
  coalesceEvents: row.coalesce_events,
  batch: row.batch,
  traceContext: row.trace_context,
  destination: row.destination,
  auth: row.auth,
  tls: row.tls,
  signingSecret: row.signing_secret,
  previousSigningSecret: row.previous_signing_secret,
  previousSecretExpiresAt: row.previous_secret_expires_at,
  disabledReason: row.disabled_reason,
  disabledAt: row.disabled_at,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** Webhook ids are positive bigints; anything else cannot name a webhook. */
export function isWebhookId(id: string): boolean {
  return /^[1-9]\d{0,17}$/.test(id);
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Inserts a webhook; a duplicate name raises the database's unique violation (23505). */
export async function insertWebhook(
  db: Queryable,
  input: WebhookInput,
  signingSecret = generateSigningSecret(),
): Promise<WebhookRecord> {
  const { rows } = await db.query<WebhookRow>(
    `INSERT INTO webhooks (name, url, enabled, headers, events, custom_payload, http_basic_user,
       http_basic_password, payload_api_version, nested_items_in_payload, auto_retry, redact_headers,
       signing_secret, delivery_policy, payload_changes, delivery_order, coalesce_events, batch,
       trace_context, destination, auth, tls)
     VALUES ($1, $2, $3, $4::json, $5::json, $6, $7, $8, $9, $10, $11, $12::json, $13, $14::json,
       $15, $16, $17, $18::jsonb, $19, $20::jsonb, $21::jsonb, $22::jsonb)
     ${RETURNING}`,
    [
      input.name,
      input.url,
      input.enabled,
      JSON.stringify(input.headers),
      JSON.stringify(input.events),
      input.customPayload,
      input.httpBasicUser,
      input.httpBasicPassword,
      input.payloadApiVersion,
      input.nestedItemsInPayload,
      input.autoRetry,
      JSON.stringify(input.redactHeaders),
      signingSecret,
      JSON.stringify(input.deliveryPolicy ?? {}),
      input.payloadChanges ?? false,
      input.deliveryOrder ?? 'any',
      input.coalesceEvents ?? false,
      input.batch ? JSON.stringify(input.batch) : null,
      input.traceContext ?? true,
      JSON.stringify(input.destination ?? { kind: 'http' }),
      input.auth ? JSON.stringify(input.auth) : null,
      input.tls ? JSON.stringify(input.tls) : null,
    ],
  );
  return toWebhook(rows[0]!);
}

export async function findWebhook(db: Queryable, id: string): Promise<WebhookRecord | null> {
  if (!isWebhookId(id)) return null;
  const { rows } = await db.query<WebhookRow>(`${SELECT} FROM webhooks WHERE id = $1`, [id]);
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** True when another webhook (not `exceptId`) has this name. */
export async function isWebhookNameTaken(
  db: Queryable,
  name: string,
  exceptId?: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM webhooks WHERE name = $1 AND id IS DISTINCT FROM $2::bigint',
    [name, exceptId ?? null],
  );
  return rowCount > 0;
}

/** Every webhook, oldest first (GET /webhooks is not paginated). */
export async function listWebhooks(db: Queryable): Promise<WebhookRecord[]> {
  const { rows } = await db.query<WebhookRow>(`${SELECT} FROM webhooks ORDER BY id`);
  return rows.map(toWebhook);
}

/**
 * One page of the webhooks, oldest first, optionally those whose name or URL contains `query`
 * (case-insensitive; `%` and `_` are literal), with how many match in all. A scan of the table's
 * name and url: 5-8 ms at 5,000 webhooks (EXPLAIN ANALYZE), so no trigram index (and no
 * extension that PGlite lacks) for now.
 */
export async function listWebhooksPage(
  db: Queryable,
  options: { query: string | null; offset: number; limit: number },
): Promise<{ webhooks: WebhookRecord[]; totalCount: number }> {
  const pattern = options.query ? `%${options.query.replace(/[\\%_]/g, '\\$&')}%` : null;
  const where = `$1::text IS NULL OR name ILIKE $1 OR url ILIKE $1`;
  const [page, count] = await Promise.all([
    db.query<WebhookRow>(`${SELECT} FROM webhooks WHERE ${where} ORDER BY id LIMIT $2 OFFSET $3`, [
      pattern,
      options.limit,
      options.offset,
    ]),
    db.query<{ count: string }>(`SELECT count(*) FROM webhooks WHERE ${where}`, [pattern]),
  ]);
  return { webhooks: page.rows.map(toWebhook), totalCount: Number(count.rows[0]!.count) };
}

/** Each webhook's id and version (bumped on every update), oldest first. */
export async function listWebhookVersions(
  db: Queryable,
): Promise<{ id: string; version: number }[]> {
  const { rows } = await db.query<{ id: string; version: number }>(
    'SELECT id, version FROM webhooks ORDER BY id',
  );
  return rows;
}

/** The webhooks among `ids` that exist, oldest first. */
export async function findWebhooks(
  db: Queryable,
  ids: readonly string[],
): Promise<WebhookRecord[]> {
  const valid = ids.filter(isWebhookId);
  if (!valid.length) return [];
  const { rows } = await db.query<WebhookRow>(
    {
      name: 'herald.webhooks.find',
      text: `${SELECT} FROM webhooks WHERE id = ANY($1::bigint[]) ORDER BY id`,
    },
    [valid],
  );
  return rows.map(toWebhook);
}

/**
 * The webhooks delivery matches events against (the enabled ones), with the webhooks' generation
 * they were read at (migration 032): one statement, so the list holds every change that
 * generation counts.
 */
export async function readWebhookIndex(
  db: Queryable,
): Promise<{ generation: bigint; webhooks: WebhookRecord[] }> {
  const { rows } = await db.query<WebhookRow & { webhooks_generation: string }>(
    `${SELECT}, g.generation::text AS webhooks_generation
     FROM webhooks_generation g LEFT JOIN webhooks ON enabled ORDER BY id`,
  );
  return {
    generation: BigInt(rows[0]?.webhooks_generation ?? 0),
    // No webhook: one row of nulls beside the generation.
    webhooks: rows.filter((row) => row.id !== null).map(toWebhook),
  };
}

/**
 * Sets the given fields; null when there is no such webhook. Enabling a webhook clears its
 * disabled_reason. A duplicate name raises the unique violation (23505).
 */
export async function updateWebhook(
  db: Queryable,
  id: string,
  patch: Partial<WebhookInput>,
): Promise<WebhookRecord | null> {
  if (!isWebhookId(id)) return null;
  const sets: string[] = ['updated_at = now()'];
  const params: unknown[] = [id];
  for (const key of Object.keys(COLUMNS) as (keyof WebhookInput)[]) {
    if (patch[key] === undefined) continue;
    const { column, json } = COLUMNS[key];
    // A JSON column set to null is SQL NULL (batch: none), not the JSON value null.
    const value = patch[key];
    params.push(json && value !== null ? JSON.stringify(value) : value);
    sets.push(`${column} = $${params.length}${json ? '::json' : ''}`);
  }
  if (patch.enabled === true) sets.push('disabled_reason = NULL', 'disabled_at = NULL');
  // The first disable's time stays while it is disabled.
  if (patch.enabled === false) sets.push('disabled_at = coalesce(disabled_at, now())');
  const update = `UPDATE webhooks SET ${sets.join(', ')} WHERE id = $1 ${RETURNING}`;
  if (patch.enabled !== false) {
    const { rows } = await db.query<WebhookRow>(update, params);
    return rows[0] ? toWebhook(rows[0]) : null;
  }
  params.push('the webhook was disabled');
  const { rows } = await db.query<WebhookRow>(
    `WITH w AS (${update}), ended AS (
       ${endCallsOf(`$${params.length}`)} AND EXISTS (SELECT 1 FROM w)
     ) ${SELECT} FROM w`,
    params,
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/**
 * Ends the unfinished calls (pending, rescheduled) of webhook $1 with the reason in `reason`, in
 * the statement that disables or deletes it: from the moment that change commits, nothing of the
 * webhook waits for a retry, and createWebhookCalls makes no new call for it.
 */
const endCallsOf = (reason: string): string => `UPDATE webhook_calls
  SET status = 'failed', next_retry_at = NULL, failure_reason = ${reason}, held_by = NULL
  WHERE webhook_id = $1 AND status IN ('pending', 'rescheduled')`;

/** Deletes and returns the webhook; null when there is none. */
export async function deleteWebhook(db: Queryable, id: string): Promise<WebhookRecord | null> {
  if (!isWebhookId(id)) return null;
  const { rows } = await db.query<WebhookRow>(
    `WITH w AS (DELETE FROM webhooks WHERE id = $1 ${RETURNING}), ended AS (
       ${endCallsOf('$2')} AND EXISTS (SELECT 1 FROM w)
     ) ${SELECT} FROM w`,
    [id, 'the webhook was deleted'],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/**
 * Replaces the signing secret; the old one keeps signing beside it for `graceMs` (a second
 * rotation within that time ends the first one's grace).
 */
export async function rotateWebhookSecret(
  db: Queryable,
  id: string,
  graceMs: number,
  signingSecret = generateSigningSecret(),
): Promise<WebhookRecord | null> {
  if (!isWebhookId(id)) return null;
  const { rows } = await db.query<WebhookRow>(
    `UPDATE webhooks SET previous_signing_secret = signing_secret,
       previous_secret_expires_at = now() + $3 * interval '1 millisecond',
       signing_secret = $2, updated_at = now()
     WHERE id = $1 ${RETURNING}`,
    [id, signingSecret, graceMs],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/**
 * Disables a webhook with a reason (e.g. its endpoint answered 410 Gone) and ends its unfinished
 * calls with `callsReason`, in one statement.
 */
export async function disableWebhook(
  db: Queryable,
  id: string,
  reason: string,
  callsReason = 'the webhook was disabled',
  /** Only if it is enabled and was not edited for this long (null: whatever its state). */
  unchangedForMs: number | null = null,
): Promise<WebhookRecord | null> {
  if (!isWebhookId(id)) return null;
  const { rows } = await db.query<WebhookRow>(
    `WITH w AS (
       UPDATE webhooks SET enabled = false, disabled_reason = $2, updated_at = now(),
         disabled_at = coalesce(disabled_at, now())
       WHERE id = $1 AND ($4::float8 IS NULL
         OR (enabled AND updated_at < now() - $4::float8 * interval '1 millisecond'))
       ${RETURNING}
     ), ended AS (
       ${endCallsOf('$3')} AND EXISTS (SELECT 1 FROM w)
     ) ${SELECT} FROM w`,
    [id, reason, callsReason, unchangedForMs],
  );
  return rows[0] ? toWebhook(rows[0]) : null;
}

/** The secrets that sign at `now`: the current one, and the previous one during its grace. */
export function activeSigningSecrets(webhook: WebhookRecord, now = new Date()): string[] {
  const secrets = [webhook.signingSecret];
  if (
    webhook.previousSigningSecret &&
    webhook.previousSecretExpiresAt &&
    webhook.previousSecretExpiresAt > now
  ) {
    secrets.push(webhook.previousSigningSecret);
  }
  return secrets;
}
