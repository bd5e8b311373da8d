-- OpenTelemetry traces (issue #32; docs/operations.md, Traces).
--
-- events.traceparent: the W3C traceparent of the POST /events span that stored the event (a child
-- of the producer's own traceparent when it sent one), so that the match and every attempt of its
-- calls continue that trace, whichever process or path (a job, the sweeper) takes them. NULL when
-- tracing was off: nothing is traced then.
ALTER TABLE events ADD COLUMN traceparent text;

-- Extension: a webhook's requests carry the traceparent of their attempt's span (false: they
-- carry none; docs/api.md, The webhook resource).
ALTER TABLE webhooks ADD COLUMN trace_context boolean NOT NULL DEFAULT true;

-- Written with the event: functions/herald_write_item_batch.sql, applied with this migration.
