-- API tokens managed while Herald runs (issue #29: /access_tokens, DatoCMS-shaped).
--
-- hardcoded_type 'bootstrap': the admin token whose value is configuration (HERALD_ADMIN_TOKEN,
-- or the single process's HERALD_DATA_DIR/admin-token), registered by each HTTP process at start
-- so that it is listed and can be revoked like any other. Its name, role and value are not
-- edited through the API (its value would come back at the next start).
-- last_used_at: set when a process looks the token up (at most once a minute), so an operator
-- can see whether a token is still in use before revoking it.
ALTER TABLE api_tokens
  ADD COLUMN hardcoded_type text CHECK (hardcoded_type IN ('bootstrap')),
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN last_used_at timestamptz;
UPDATE api_tokens SET updated_at = coalesce(revoked_at, created_at);
