-- Webhooks (API.md §4.1–4.2). Webhooks belong to the whole deployment, not to an environment.
-- headers and events are `json` (not jsonb) so they come back exactly as sent: header order and
-- each events entry's shape (`filter` or `filters`) are echoed.
CREATE TABLE webhooks (
  id                          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name                        text NOT NULL,
  url                         text NOT NULL,
  enabled                     boolean NOT NULL DEFAULT true,
  headers                     json NOT NULL,
  events                      json NOT NULL,
  custom_payload              text,
  http_basic_user             text,
  http_basic_password         text,
  payload_api_version         text NOT NULL DEFAULT '3',
  nested_items_in_payload     boolean NOT NULL DEFAULT false,
  auto_retry                  boolean NOT NULL DEFAULT true,
  signing_secret              text NOT NULL,
  -- During a rotation the old secret keeps signing beside the new one until this time.
  previous_signing_secret     text,
  previous_secret_expires_at  timestamptz,
  disabled_reason             text,
  -- Bumped by a trigger on every update: readers (the list cache, match workers) compare it.
  version                     integer NOT NULL DEFAULT 1,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
-- Names are unique; the index (not a check in code) makes it hold under concurrent creates.
CREATE UNIQUE INDEX webhooks_name_key ON webhooks (name);
-- The match workers load enabled webhooks.
CREATE INDEX webhooks_enabled_idx ON webhooks (id) WHERE enabled;
-- The trigger that bumps version: functions/webhooks_bump_version.sql.
