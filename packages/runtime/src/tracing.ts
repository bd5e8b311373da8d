import {
  ROOT_CONTEXT,
  TraceFlags,
  isSpanContextValid,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { Logger } from './logger.js';
import type { Lifecycle } from './shutdown.js';

let heraldTracer: Tracer = trace.getTracer('herald');

/**
 * Herald's tracer (docs/operations.md, Traces). Until startTracing registers the SDK it hands
 * out the API's no-op spans: they record nothing and, without a parent, have no valid context,
 * so traceparentOf gives null and nothing is stored or sent.
 */
export const tracer = (): Tracer => heraldTracer;

/**
 * The variables that turn tracing on; the SDK reads the other OTEL_* variables itself. A process
 * that does not read them (the read service) starts no tracing.
 */
export interface TracingConfig {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_SDK_DISABLED?: boolean | undefined;
  OTEL_SERVICE_NAME?: string | undefined;
}

/**
 * Starts the OpenTelemetry SDK for Node when an OTLP endpoint is set (and OTEL_SDK_DISABLED is
 * not): spans go by OTLP over HTTP (OTEL_EXPORTER_OTLP_PROTOCOL, http/protobuf by default), W3C
 * trace context, the standard OTEL_* variables as the SDK reads them. Traces only: Herald's
 * metrics stay Prometheus's, its logs pino's. Without an endpoint the SDK is not even loaded, and
 * the hot path touches only the API's no-op tracer. Its shutdown (registered here, so it runs
 * after the workers' and the server's, which register later) exports the spans still buffered.
 */
export async function startTracing(
  serviceName: string,
  config: TracingConfig,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<boolean> {
  const endpoint = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || config.OTEL_SDK_DISABLED) return false;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME, when set, names the service (the SDK's env detector reads it).
    ...(config.OTEL_SERVICE_NAME ? {} : { serviceName }),
    // Without these, the SDK would also export metrics and logs by OTLP.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  // Asked again: the SDK (CommonJS) registers its provider with the API's CommonJS build, whose
  // proxy the tracer got above from the ESM build never hears of; the global provider it does.
  heraldTracer = trace.getTracer('herald');
  lifecycle.onShutdown('tracing', () => sdk.shutdown());
  logger.info({ endpoint: redactEndpoint(endpoint) }, 'tracing: spans exported by OTLP');
  return true;
}

/** The endpoint without credentials or a query, for the log. */
function redactEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * A span's W3C `traceparent` (version 00), or null when it has no valid context: tracing is off,
 * or the span is not sampled and has no parent either.
 */
export function traceparentOf(span: Span): string | null {
  const context = span.spanContext();
  if (!isSpanContextValid(context)) return null;
  const flags = (context.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/**
 * The context whose parent is the span of a stored `traceparent` (as traceparentOf wrote it), or
 * the root context when there is none or it is not one.
 */
export function contextOf(traceparent: string | null | undefined): Context {
  const parts = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!parts) return ROOT_CONTEXT;
  const spanContext = {
    traceId: parts[1]!,
    spanId: parts[2]!,
    traceFlags: parseInt(parts[3]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(spanContext)
    ? trace.setSpanContext(ROOT_CONTEXT, spanContext)
    : ROOT_CONTEXT;
}
