import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { DeliverJobData } from '@herald/contract';
import {
  renderDeliveryRequest,
  requestForDestination,
  signWebhook,
  type CallContent,
  type DeliveryRequest,
} from '@herald/payload';
import { contextOf, enqueueRetry, traceparentOf, tracer } from '@herald/runtime';
import {
  activeSigningSecrets,
  disableWebhook,
  type AttemptTrigger,
  type ReleasedLaneCall,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { DeliverySettings } from '../../settings.js';
import { writeUntilStored } from '../../shared/outage.js';
import type { Limits, RateReservation } from '../limits/limits.js';
import type { SystemResources } from '../resources.js';
import { decideOutcome, statusClass, tripsCircuit, type Outcome } from './decide-outcome.js';
import { HttpClient, type SendResult } from './http-client.js';
import { Publishers } from './publish/publishers.js';
import { OAuth2Tokens } from './oauth2-tokens.js';
import { TlsDispatchers } from './tls-dispatchers.js';
import type { OutcomeRecorder } from './record-outcomes.js';

/** The call an attempt is made of, as its job or its caller knows it. */
export type AttemptedCall = Pick<
  WebhookCallRecord,
  'id' | 'status' | 'nextRetryAt' | 'attemptedAutoRetriesCount'
> & {
  /** A test call: sent once, never retried automatically. */
  test?: boolean;
  /** In a lane (flow control): its final outcome releases the next call of the lane. */
  lane: boolean;
  /** The slot its webhook's rate limit reserved for this attempt, if it is limited. */
  rate?: RateReservation | null;
};

/** What an attempt came to, and the lane calls its recorded outcome released (flow control). */
export interface Attempted {
  outcome: Outcome;
  released: ReleasedLaneCall[];
}

export type AttemptDeps = Pick<
  SystemResources,
  'db' | 'deliverQueue' | 'models' | 'logger' | 'announce' | 'closing'
> & {
  metrics: Pick<
    DeliveryMetrics,
    'deliveryDuration' | 'deliveries' | 'attempts' | 'endToEndLatency'
  >;
  /** Where the outcome is recorded. */
  outcomes: OutcomeRecorder;
  /** Told when a rate-limited request starts. */
  limits: Pick<Limits, 'untilRateSlot' | 'rateStarted'>;
};

/** The service's settings an attempt reads: the request's, its client's and the retries'. */
export type AttemptSettings = Pick<
  DeliverySettings,
  | 'siteId'
  | 'userAgent'
  | 'retry'
  | 'connectTimeoutMs'
  | 'timeoutMs'
  | 'allowCidrs'
  | 'responseMaxBytes'
  | 'connectionsPerOrigin'
>;

/**
 * One attempt of a call: renders and sends it, decides its outcome (decideOutcome) and records
 * it. Whoever calls it has taken the call's limits and claim; it returns the outcome and the lane
 * calls the outcome released, for the caller to start.
 */
export class Attempts {
  /** One undici Agent per process, shared by every attempt. */
  readonly #client: HttpClient;
  /** The broker connections of the webhooks whose destination is not HTTP. */
  readonly #publishers: Publishers;
  /** The OAuth2 tokens of webhooks with `auth` (docs/api.md, Endpoint authentication). */
  readonly #tokens: OAuth2Tokens;
  /** An Agent per mutual TLS identity, for webhooks with `tls`. */
  readonly #tls: TlsDispatchers;

  constructor(
    private readonly deps: AttemptDeps,
    private readonly settings: AttemptSettings,
  ) {
    this.#client = new HttpClient({
      connectTimeoutMs: settings.connectTimeoutMs,
      totalTimeoutMs: settings.timeoutMs,
      allowCidrs: settings.allowCidrs,
      maxResponseBytes: settings.responseMaxBytes,
      connectionsPerOrigin: settings.connectionsPerOrigin,
    });
    const client = this.#client;
    this.#tokens = new OAuth2Tokens({
      send: (url, headers, body) => client.send(url, headers, body),
    });
    this.#tls = new TlsDispatchers((tls) => client.createAgent(tls));
    this.#publishers = new Publishers({
      connectTimeoutMs: settings.connectTimeoutMs,
      totalTimeoutMs: settings.timeoutMs,
      allowCidrs: settings.allowCidrs,
    });
  }

  /** A webhook changed or went: its token and its TLS Agent are not used again. */
  webhookChanged(webhookId: string): void {
    this.#tokens.forget(webhookId);
    this.#tls.forget(webhookId);
  }

  /** Closes the client's, the TLS Agents' and the publishers' connections (once no attempt is in flight). */
  async close(): Promise<void> {
    await Promise.all([this.#client.close(), this.#tls.close(), this.#publishers.close()]);
  }

  async make(
    data: DeliverJobData,
    call: AttemptedCall,
    webhook: WebhookRecord,
    content: CallContent,
    /** A bulk job's attempt (its trigger); otherwise the job data and the call say which. */
    jobTrigger?: 'bulk_resend' | 'replay',
    /** Hears that the endpoint answered (or the request failed), before the outcome is written. */
    answered?: () => void,
  ): Promise<Attempted> {
    const trigger = jobTrigger
      ? jobTrigger
      : data.resend
        ? ('resend' as const)
        : call.test
          ? ('test' as const)
          : data.retry
            ? ('retry' as const)
            : ('first' as const);
    // The attempt's span continues its event's trace (a call carrying several: the latest one's);
    // the request carries its traceparent unless the webhook opts out (docs/operations.md, Traces).
    const span = tracer().startSpan(
      'herald.attempt',
      { kind: SpanKind.CLIENT },
      contextOf(content.event.traceparent),
    );
    try {
      const attempted = await this.#traced(data, call, webhook, content, trigger, span, answered);
      if (span.isRecording()) endAttemptSpan(span, attempted.outcome);
      return attempted;
    } catch (error) {
      if (span.isRecording()) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the attempt did not complete' });
        span.end();
      }
      throw error;
    }
  }

  /** make, within its span. */
  async #traced(
    data: DeliverJobData,
    call: AttemptedCall,
    webhook: WebhookRecord,
    content: CallContent,
    trigger: AttemptTrigger,
    span: Span,
    answered: (() => void) | undefined,
  ): Promise<Attempted> {
    const { deps, settings } = this;
    const retriesCount = data.retry ?? call.attemptedAutoRetriesCount;
    const renderedAt = new Date();
    const { event, entries } = content;
    if (span.isRecording()) {
      span.setAttributes({
        'herald.webhook.id': webhook.id,
        'herald.webhook_call.id': call.id,
        'herald.event.id': event.id,
        'herald.event.type': `${event.entityType}.${event.eventType}`,
        'herald.attempt.number': retriesCount + 1,
        'herald.attempt.trigger': trigger,
        'http.request.method': 'POST',
      });
    }
    const rendered = await renderDeliveryRequest(deps.db, {
      webhook,
      event,
      entries,
      callId: call.id,
      siteId: settings.siteId,
      userAgent: settings.userAgent,
      attemptedAutoRetriesCount: retriesCount,
      sign: (id, timestamp, signed) =>
        signWebhook(activeSigningSecrets(webhook, renderedAt), id, timestamp, signed),
      now: renderedAt,
      models: deps.models.forEvent(event),
      traceparent: webhook.traceContext ? traceparentOf(span) : null,
    });
    const destination = webhook.destination;
    const request = requestForDestination(rendered, webhook);

    // A rate-limited request was rendered while it waited for its slot: it is sent (and logged
    // as sent) once the slot has come.
    let sentAt = renderedAt;
    if (call.rate) {
      await deps.limits.untilRateSlot(call.rate);
      void deps.limits.rateStarted(call.rate);
      sentAt = new Date();
    }
    const started = performance.now();
    const result =
      destination.kind === 'http'
        ? await this.#send(webhook, request)
        : await this.#publishers.publish(destination, {
            id: call.id,
            body: request.body,
            headers: request.headers,
          });
    answered?.();
    if (span.isRecording()) {
      if (result.kind === 'response') span.setAttribute('http.response.status_code', result.status);
      else span.setAttribute('error.type', result.error);
    }
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.deliveryDuration.observe({ status_class: statusClass(result) }, seconds);

    const outcome = decideOutcome(
      result,
      {
        status: call.status,
        nextRetryAt: call.nextRetryAt,
        retriesCount,
        resend: data.resend === true,
        autoRetry: webhook.autoRetry && !call.test,
      },
      { retry: settings.retry, now: Date.now(), random: Math.random },
    );
    const sent = {
      callId: call.id,
      lane: call.lane,
      webhook,
      event,
      retriesCount,
      trigger,
      sentAt,
      durationMs: seconds * 1000,
      request,
      result,
    };
    const released = await this.#record(outcome, sent);
    return { outcome, released };
  }

  /**
   * Sends a rendered request: on the webhook's TLS Agent when it has `tls`, with its OAuth2 token
   * when it has `auth` (asked again once when the endpoint answers 401 with the cached one; the
   * second answer stands). A token that cannot be had is an `auth` failure, the endpoint unasked.
   */
  async #send(webhook: WebhookRecord, request: DeliveryRequest): Promise<SendResult> {
    const dispatcher = this.#tls.for(webhook.id, webhook.tls);
    const send = (headers: Record<string, string>) =>
      this.#client.send(request.url, headers, request.body, dispatcher);
    const { auth } = webhook;
    if (!auth) return withTlsHint(webhook, await send(request.headers));
    let refreshed = false;
    for (;;) {
      const token = await this.#tokens.token(webhook.id, auth);
      if (!token.ok) return { kind: 'error', error: 'auth', reason: token.reason };
      const result = await send({ ...request.headers, Authorization: `Bearer ${token.token}` });
      if (refreshed || result.kind !== 'response' || result.status !== 401) {
        return withTlsHint(webhook, result);
      }
      this.#tokens.refused(webhook.id, token.token);
      refreshed = true;
    }
  }

  /**
   * Carries an attempt's outcome out: records it (waiting for a database that is away: the
   * request was sent, so sending it again would deliver it twice), disables a webhook that
   * answered 410, counts it, schedules the retry and logs a failure. Returns the lane calls the
   * record released.
   */
  async #record(outcome: Outcome, sent: SentAttempt): Promise<ReleasedLaneCall[]> {
    const { deps } = this;
    const { callId, webhook, event, sentAt, request, result } = sent;
    const response = result.kind === 'response' ? result : null;
    const released = await writeUntilStored(
      () =>
        deps.outcomes.recordOutcome(callId, {
          webhookId: webhook.id,
          lane: sent.lane,
          status: outcome.status,
          trigger: sent.trigger,
          durationMs: sent.durationMs,
          tripsCircuit: tripsCircuit(result),
          requestUrl: request.logged.url,
          requestHeaders: request.logged.headers,
          requestPayload: request.body,
          responseStatus: response?.status ?? null,
          responseHeaders: response?.headers ?? null,
          responsePayload: response?.body ?? null,
          failureReason: outcome.failureReason,
          attemptedAutoRetriesCount: sent.retriesCount,
          lastSentAt: sentAt,
          nextRetryAt: outcome.nextRetryAt,
        }),
      deps.closing,
    );
    if (outcome.kind === 'gone') {
      // Once this call's outcome is in (the disable ends the calls still waiting, and this one is
      // not), one statement disables the webhook and ends its waiting calls: from its commit no
      // new call is made (createWebhookCalls reads the webhook's row). Announced so every
      // process's index, and the first attempts queued in memory, hear of it now, not at the
      // next reload.
      const reason = `the endpoint answered 410 Gone at ${sentAt.toISOString()}`;
      await writeUntilStored(
        () => disableWebhook(deps.db, webhook.id, reason, 'the webhook was disabled (410 Gone)'),
        deps.closing,
      );
      await deps.announce({ id: webhook.id, change: 'updated' });
      deps.logger.warn({ webhookId: webhook.id, callId }, 'webhook disabled: 410 Gone');
    }
    const klass = statusClass(result);
    deps.metrics.deliveries.inc({ outcome: outcome.status, status_class: klass });
    deps.metrics.attempts.inc({
      trigger: sent.trigger,
      result: outcome.kind === 'succeeded' ? 'success' : 'failure',
    });
    if (outcome.kind === 'succeeded') {
      deps.metrics.endToEndLatency.observe(
        { trigger: sent.trigger },
        (Date.now() - event.acceptedAt.getTime()) / 1000,
      );
      return released;
    }
    if (outcome.kind === 'retry') {
      // Due at nextRetryAt, however long the write took.
      const delayMs = Math.max(0, outcome.nextRetryAt.getTime() - Date.now());
      await enqueueRetry(
        deps.deliverQueue,
        { id: callId, webhookId: webhook.id },
        outcome.retry,
        delayMs,
      );
    }
    deps.logger.info(
      {
        callId,
        webhookId: webhook.id,
        status: outcome.status,
        statusClass: klass,
        reason: outcome.failureReason,
      },
      'delivery attempt failed',
    );
    return released;
  }
}

/**
 * Under TLS 1.3 a server that refuses the client certificate (or wants one) does so after the
 * client's side of the handshake: the client sees the connection closed, not a TLS error. The
 * reason of a webhook with `tls` says what it likely means.
 */
function withTlsHint(webhook: WebhookRecord, result: SendResult): SendResult {
  if (!webhook.tls || result.kind !== 'error' || result.error !== 'reset') return result;
  const what = webhook.tls.client_certificate
    ? 'refused the client certificate'
    : 'wants a client certificate';
  return { ...result, reason: `${result.reason}; the endpoint may have ${what}` };
}

/** Ends an attempt's span with its outcome (success, rescheduled, failed). */
function endAttemptSpan(span: Span, outcome: Outcome): void {
  span.setAttribute('herald.attempt.outcome', outcome.status);
  if (outcome.status !== 'success') {
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.status });
  }
  span.end();
}

/** An attempt made: what was sent, and what came back. */
interface SentAttempt {
  callId: string;
  /** A lane call: see AttemptedCall. */
  lane: boolean;
  webhook: WebhookRecord;
  event: StoredEvent;
  /** Auto retries made before this attempt. */
  retriesCount: number;
  trigger: AttemptTrigger;
  sentAt: Date;
  durationMs: number;
  request: DeliveryRequest;
  result: SendResult;
}
