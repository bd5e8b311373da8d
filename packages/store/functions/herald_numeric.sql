-- migrations: 004
-- A number field value as numeric, NULL when the stored value is not a JSON number.
CREATE OR REPLACE FUNCTION herald_numeric(value jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(value) = 'number' THEN (value #>> '{}')::numeric END
$$;
