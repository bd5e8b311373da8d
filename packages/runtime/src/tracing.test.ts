import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contextOf, traceparentOf, tracer } from './tracing.js';

const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });

describe('traceparent', () => {
  it('goes to a context and back unchanged, for any valid one', () => {
    fc.assert(
      fc.property(hex(32), hex(16), fc.boolean(), (traceId, spanId, sampled) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
        const traceparent = `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
        const span = trace.wrapSpanContext(trace.getSpanContext(contextOf(traceparent))!);
        expect(traceparentOf(span)).toBe(traceparent);
      }),
    );
  });

  it('is the root context when absent or not one', () => {
    for (const value of [
      null,
      undefined,
      '',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331',
      'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      '00-00000000000000000000000000000000-b7ad6b7169203331-01',
      '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
      '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
    ]) {
      expect(contextOf(value), String(value)).toBe(ROOT_CONTEXT);
    }
  });

  it('keeps only the sampled flag', () => {
    const context = contextOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03');
    expect(trace.getSpanContext(context)?.traceFlags).toBe(TraceFlags.SAMPLED);
  });

  it('is null for the spans of tracing off (no SDK started)', () => {
    expect(traceparentOf(tracer().startSpan('x'))).toBeNull();
    // A stored parent passes through a no-op span unchanged: nothing new is made up.
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(traceparentOf(tracer().startSpan('x', {}, contextOf(parent)))).toBe(parent);
  });
});
