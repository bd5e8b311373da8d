-- migrations: 004
-- A date_time field value as timestamptz, NULL for anything that is not a valid ISO-8601
-- date-time (a field whose type changed keeps old values; they must not make a query or an
-- index build fail). A value without a zone is UTC (seed rule 5). IMMUTABLE holds because the
-- cast is only reached with an explicit zone, so TimeZone never matters; the nested CASEs fix
-- the evaluation order (the day check must not run on a non-matching string).
CREATE OR REPLACE FUNCTION herald_timestamptz(value text) RETURNS timestamptz
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
