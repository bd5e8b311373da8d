-- migrations: 004, 006
-- Keeps record_counts (migrations 004 and 006): statement-level triggers add each statement's
-- deltas of top-level records, one call of herald_add_record_count per model, to the sharded rows.
CREATE OR REPLACE FUNCTION herald_count_records() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  d record;
  -- What an INSERT wrote counts up, what a DELETE removed counts down: both triggers name their
  -- transition table changed_rows.
  sign int := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
BEGIN
  IF TG_OP IN ('INSERT', 'DELETE') THEN
    FOR d IN
      SELECT environment, item_type_id, count(current_attributes) AS cur,
        count(published_attributes) AS pub
      FROM changed_rows WHERE NOT is_block
      GROUP BY environment, item_type_id ORDER BY environment, item_type_id
    LOOP
      PERFORM herald_add_record_count(d.environment, d.item_type_id, sign * d.cur, sign * d.pub);
    END LOOP;
  ELSE
    FOR d IN
      SELECT environment, item_type_id, sum(cur)::bigint AS cur, sum(pub)::bigint AS pub
      FROM (SELECT environment, item_type_id, (current_attributes IS NOT NULL)::int AS cur,
              (published_attributes IS NOT NULL)::int AS pub
            FROM new_rows WHERE NOT is_block
            UNION ALL
            SELECT environment, item_type_id, -(current_attributes IS NOT NULL)::int,
              -(published_attributes IS NOT NULL)::int
            FROM old_rows WHERE NOT is_block) x
      GROUP BY environment, item_type_id
      HAVING sum(cur) <> 0 OR sum(pub) <> 0
      ORDER BY environment, item_type_id
    LOOP
      PERFORM herald_add_record_count(d.environment, d.item_type_id, d.cur, d.pub);
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER records_count_insert AFTER INSERT ON records
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();
CREATE OR REPLACE TRIGGER records_count_update AFTER UPDATE ON records
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();
CREATE OR REPLACE TRIGGER records_count_delete AFTER DELETE ON records
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_records();
