-- Environments (API.md §2): `main` is primary from the start, with locales ["en"].
CREATE TABLE environments (
  id          text PRIMARY KEY,
  locales     text[] NOT NULL CHECK (cardinality(locales) >= 1),
  is_primary  boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX environments_one_primary ON environments (is_primary) WHERE is_primary;
INSERT INTO environments (id, locales, is_primary) VALUES ('main', ARRAY['en'], true);

-- API tokens (API.md §1 "Roles"): only a SHA-256 of the token is kept.
CREATE TABLE api_tokens (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL,
  role        text NOT NULL CHECK (role IN ('admin', 'read_only', 'producer')),
  token_hash  text NOT NULL UNIQUE,
  token_hint  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
