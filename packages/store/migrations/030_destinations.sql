-- Destinations beyond HTTP (issue #33; docs/api.md, Destinations).
--
-- webhooks.destination: where the webhook's calls go. {"kind": "http"} (the default, and every
-- webhook before this migration) sends HTTP to `url`; a broker kind (rabbitmq, nats, mqtt,
-- redis_stream) publishes a message instead. Broker credentials (in the destination's `url` or
-- its `password`) are stored here as `http_basic_password` is, and never shown by the API.
ALTER TABLE webhooks ADD COLUMN destination jsonb NOT NULL DEFAULT '{"kind": "http"}';
