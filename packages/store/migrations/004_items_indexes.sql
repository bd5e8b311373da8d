-- What GET /items (API.md §3) needs beyond the record store of 002: value helpers that field
-- filters, sorts and their lazily created expression indexes share, and an exact per-model count.

-- A date_time field value as timestamptz, NULL for anything that is not a valid ISO-8601
-- date-time (a field whose type changed keeps old values; they must not make a query or an
-- index build fail). A value without a zone is UTC (seed rule 5). IMMUTABLE holds because the
-- cast is only reached with an explicit zone, so TimeZone never matters; the nested CASEs fix
-- the evaluation order (the day check must not run on a non-matching string).
CREATE FUNCTION herald_timestamptz(value text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE
    WHEN value ~ '^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-](0\d|1[0-5]):[0-5]\d)?$'
         AND substr(value, 1, 4) <> '0000'
    THEN CASE
      WHEN substr(value, 9, 2)::int <= extract(day FROM make_date(substr(value, 1, 4)::int,
             substr(value, 6, 2)::int, 1) + interval '1 month - 1 day')
      THEN (CASE WHEN value ~ '(Z|[+-]\d\d:\d\d)$' THEN value ELSE value || 'Z' END)::timestamptz
    END
  END
$$;

-- A number field value as numeric, NULL when the stored value is not a JSON number.
CREATE FUNCTION herald_numeric(value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN (value #>> '{}')::numeric END
$$;

-- Exact counts of top-level records per model and version, so that an unfiltered listing's
-- meta.total_count is one primary-key read instead of a count over a million rows. Kept by
-- statement-level triggers (one upsert per statement and model, whatever the batch size), so the
-- store's write path needs no change. Blocks are not counted (listings never return them
-- unfiltered).
CREATE TABLE record_counts (
  environment     text NOT NULL,
  item_type_id    text NOT NULL,
  current_count   bigint NOT NULL DEFAULT 0,
  published_count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (environment, item_type_id)
);

CREATE FUNCTION herald_count_records() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO record_counts AS c (environment, item_type_id, current_count, published_count)
    SELECT environment, item_type_id, count(current_attributes), count(published_attributes)
    FROM new_rows WHERE NOT is_block
    GROUP BY environment, item_type_id ORDER BY environment, item_type_id
    ON CONFLICT (environment, item_type_id) DO UPDATE SET
      current_count = c.current_count + EXCLUDED.current_count,
      published_count = c.published_count + EXCLUDED.published_count;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE record_counts c SET
      current_count = c.current_count - d.current_count,
      published_count = c.published_count - d.published_count
    FROM (SELECT environment, item_type_id, count(current_attributes) AS current_count,
            count(published_attributes) AS published_count
          FROM old_rows WHERE NOT is_block GROUP BY environment, item_type_id) d
    WHERE c.environment = d.environment AND c.item_type_id = d.item_type_id;
  ELSE
    INSERT INTO record_counts AS c (environment, item_type_id, current_count, published_count)
    SELECT environment, item_type_id, sum(cur), sum(pub)
    FROM (SELECT environment, item_type_id, (current_attributes IS NOT NULL)::int AS cur,
            (published_attributes IS NOT NULL)::int AS pub
          FROM new_rows WHERE NOT is_block
          UNION ALL
          SELECT environment, item_type_id, -(current_attributes IS NOT NULL)::int,
            -(published_attributes IS NOT NULL)::int
          FROM old_rows WHERE NOT is_block) d
    GROUP BY environment, item_type_id
    HAVING sum(cur) <> 0 OR sum(pub) <> 0
    ORDER BY environment, item_type_id
    ON CONFLICT (environment, item_type_id) DO UPDATE SET
      current_count = c.current_count + EXCLUDED.current_count,
      published_count = c.published_count + EXCLUDED.published_count;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER records_count_insert AFTER INSERT ON records
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();
CREATE TRIGGER records_count_update AFTER UPDATE ON records
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();
CREATE TRIGGER records_count_delete AFTER DELETE ON records
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();

INSERT INTO record_counts (environment, item_type_id, current_count, published_count)
SELECT environment, item_type_id, count(current_attributes), count(published_attributes)
FROM records WHERE NOT is_block GROUP BY environment, item_type_id;

-- Tree models: meta.has_children and filter[fields][parent_id] look records up by parent.
CREATE INDEX records_by_parent ON records (environment, parent_id) WHERE parent_id IS NOT NULL;
