-- migrations: 032
-- Moves the webhooks' generation once per statement that changed webhooks (migration 032). The
-- row's lock orders concurrent changes: a reader sees the new generation together with the
-- change, never one without the other.
CREATE OR REPLACE FUNCTION herald_bump_webhooks_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE webhooks_generation SET generation = generation + 1;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER herald_bump_webhooks_generation
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON webhooks
  FOR EACH STATEMENT EXECUTE FUNCTION herald_bump_webhooks_generation();
