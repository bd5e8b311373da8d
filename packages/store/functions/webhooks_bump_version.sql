-- migrations: 003
CREATE OR REPLACE FUNCTION webhooks_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER webhooks_bump_version BEFORE UPDATE ON webhooks
  FOR EACH ROW EXECUTE FUNCTION webhooks_bump_version();
