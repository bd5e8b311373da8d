-- migrations: 023
-- The advisory lock of a lane: every change to a lane's calls (placing events, an attempt's
-- claim, an outcome's release) holds it until its transaction ends, so they happen one at a
-- time per lane. Locks are taken in the order of their keys.
CREATE OR REPLACE FUNCTION herald_flow_lane_key(webhook bigint, lane text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT hashtextextended('herald.flow/' || webhook || '/' || lane, 0)
$$;
