-- Test sends (extension, issue #14): POST /webhooks/:id/test makes a call that carries its own
-- event, a sample or a copy of a stored one, instead of naming a stored event. It is logged and
-- attempted like any call (its attempt's trigger is `test`), never retried automatically, and
-- takes no part in the one-call-per-(event, webhook) rule: the event is not matched again.
ALTER TABLE webhook_calls ADD COLUMN test_event json;
ALTER TABLE webhook_calls ALTER COLUMN event_id DROP NOT NULL;
ALTER TABLE webhook_calls ADD CONSTRAINT webhook_calls_event_or_test
  CHECK ((event_id IS NULL) <> (test_event IS NULL));
