-- Endpoint authentication (issue #33 item 3; docs/api.md, Endpoint authentication).
--
-- Extension: how a webhook authenticates to its endpoint. `auth`: OAuth2 client credentials
-- ({"kind", "token_url", "client_id", "client_secret", "client_auth", "scope", "audience"});
-- `tls`: mutual TLS ({"client_certificate", "client_key", "ca_certificate"}, PEM). NULL: none.
-- `client_secret` and `client_key` are write-only: the API never answers them, and they never
-- reach job data, the call log or a log line.
ALTER TABLE webhooks ADD COLUMN auth jsonb, ADD COLUMN tls jsonb;
