-- Events accepted by POST /events (API.md §5) and the record store they feed (API.md §5.2).
-- Column names are a contract with the listing (GET /items), the match worker and delivery:
-- add columns freely, rename none.

-- Every accepted event, stored before the 202 (ARCHITECTURE.md decision 1). `id` is the
-- producer's idempotency key: a repeat hits the primary key and is answered `duplicate`.
CREATE TABLE events (
  id                     text PRIMARY KEY,
  -- Acceptance order; the sweeper pages on it.
  seq                    bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  environment            text NOT NULL,
  -- Whether `environment` was the primary one when the event was accepted (webhook filters).
  is_environment_primary boolean NOT NULL,
  entity_type            text NOT NULL,
  event_type             text NOT NULL,
  -- entity.id (the record, model, upload, environment... the event is about).
  entity_id              text,
  -- item events: the record's model; item_type events: the model itself (webhook filters).
  item_type_id           text,
  item_type_api_key      text,
  occurred_at            timestamptz NOT NULL,
  accepted_at            timestamptz NOT NULL DEFAULT now(),
  -- The event's entity as the producer sent it (blocks possibly expanded).
  entity                 jsonb NOT NULL,
  -- NULL when the event carries no previous_entity (the payload then omits the key, API.md §6.1).
  previous_entity        jsonb,
  related_entities       jsonb NOT NULL DEFAULT '[]',
  -- Set by the match worker (issue #6) once the event's webhook_call rows exist. NULL means
  -- "stored but not yet matched": the delivery service's sweeper re-enqueues those, so an event
  -- whose job Redis lost (Redis down at acceptance, flushed, restarted) is still delivered.
  matched_at             timestamptz
);
CREATE INDEX events_unmatched ON events (seq) WHERE matched_at IS NULL;

-- Models (item types) of an environment, from item_type events.
CREATE TABLE item_types (
  environment       text NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
  id                text NOT NULL,
  api_key           text NOT NULL,
  name              text NOT NULL,
  modular_block     boolean NOT NULL DEFAULT false,
  sortable          boolean NOT NULL DEFAULT false,
  tree              boolean NOT NULL DEFAULT false,
  draft_mode_active boolean NOT NULL DEFAULT false,
  -- The entity's attributes as sent (other DatoCMS model settings ride along).
  attributes        jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment, id),
  UNIQUE (environment, api_key)
);

-- A model's fields, from the related_entities of type `field` of its item_type events.
CREATE TABLE fields (
  environment  text NOT NULL,
  item_type_id text NOT NULL,
  api_key      text NOT NULL,
  id           text,
  field_type   text NOT NULL,
  localized    boolean NOT NULL DEFAULT false,
  label        text,
  position     integer NOT NULL DEFAULT 0,
  attributes   jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (environment, item_type_id, api_key),
  FOREIGN KEY (environment, item_type_id) REFERENCES item_types (environment, id) ON DELETE CASCADE
);

-- Records and block records (a block is an item of a modular_block model, owned by one record).
-- The current version and the published version are kept apart: `current_attributes` and
-- `published_attributes` (NULL = no published version). Block-typed fields hold block ids; the
-- blocks are rows of their own with `is_block` and their top-level `root_id`. Meta columns of
-- API.md §3.1 are real columns so that filters and ordering use indexes.
-- No foreign key to item_types here nor from record_texts to records: a per-row RI check costs
-- more than the rest of the insert on the ingest hot path. The repositories delete records and
-- texts with their model or environment (models.ts, environments.ts, records.ts).
CREATE TABLE records (
  environment                text NOT NULL,
  id                         text NOT NULL,
  item_type_id               text NOT NULL,
  is_block                   boolean NOT NULL DEFAULT false,
  -- Blocks: the top-level record that owns them (NULL for records).
  root_id                    text,
  -- Blocks: the record or block whose field holds them.
  block_parent_id            text,
  -- Tree models: the parent record (API.md §3.3 `parent_id`).
  parent_id                  text,
  -- Sortable and tree models.
  position                   integer,
  status                     text NOT NULL DEFAULT 'draft'
                             CHECK (status IN ('draft', 'updated', 'published')),
  -- NULL only for a block that belongs to the published version alone.
  current_attributes         jsonb,
  published_attributes       jsonb,
  creator_type               text,
  creator_id                 text,
  created_at                 timestamptz NOT NULL,
  updated_at                 timestamptz NOT NULL,
  published_at               timestamptz,
  first_published_at         timestamptz,
  publication_scheduled_at   timestamptz,
  unpublishing_scheduled_at  timestamptz,
  is_valid                   boolean NOT NULL DEFAULT true,
  is_current_version_valid   boolean NOT NULL DEFAULT true,
  is_published_version_valid boolean NOT NULL DEFAULT true,
  current_version            text,
  stage                      text,
  -- Orders current_version for the staleness rule (numeric versions zero-padded), see records.ts.
  version_key                text NOT NULL DEFAULT '',
  last_event_id              text,
  last_event_type            text,
  PRIMARY KEY (environment, id),
  CHECK (is_block = (root_id IS NOT NULL)),
  CHECK (is_block OR current_attributes IS NOT NULL)
);
-- Per-model access in the default order (_created_at, then id).
CREATE INDEX records_by_model ON records (environment, item_type_id, created_at, id);
-- Listing across models (records only, never blocks).
CREATE INDEX records_by_created ON records (environment, created_at, id) WHERE NOT is_block;
CREATE INDEX records_by_root ON records (environment, root_id) WHERE root_id IS NOT NULL;

-- Deleted records: a stale create/update arriving after the delete must not resurrect them.
CREATE TABLE record_tombstones (
  environment text NOT NULL,
  id          text NOT NULL,
  updated_at  timestamptz NOT NULL,
  version_key text NOT NULL DEFAULT '',
  deleted_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment, id)
);

-- Full-text documents of top-level records, one per (version, locale): the text of the record's
-- text fields and of its blocks, recursively. A localized field counts in its own locale, a
-- non-localized one in every locale of the environment (API.md §3.3). Built with the text search
-- configuration that textSearchConfig(locale) (store) names; queries must use the same one.
CREATE TABLE record_texts (
  environment  text NOT NULL,
  record_id    text NOT NULL,
  version      text NOT NULL CHECK (version IN ('current', 'published')),
  locale       text NOT NULL,
  item_type_id text NOT NULL,
  document     tsvector NOT NULL,
  PRIMARY KEY (environment, record_id, version, locale)
);
CREATE INDEX record_texts_document ON record_texts USING gin (document);
