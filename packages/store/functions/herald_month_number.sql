-- migrations: 021
CREATE OR REPLACE FUNCTION herald_month_number(at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (extract(year FROM at AT TIME ZONE 'UTC')::bigint * 12
    + extract(month FROM at AT TIME ZONE 'UTC')::bigint - 1)
$$;
