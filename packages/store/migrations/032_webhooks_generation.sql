-- The webhooks' generation: one number that every committed change of the webhooks table moves
-- (the trigger: functions/herald_bump_webhooks_generation.sql). A match reads it in the statement
-- that reads its events; a process's webhook index knows the generation it was read at, and is
-- read again when the match's is newer. So an event accepted after a webhook's creation (or edit)
-- committed is matched against it, even before the change's announcement reached the process
-- (docs/architecture.md, The match index).
CREATE TABLE webhooks_generation (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  generation bigint NOT NULL
);
INSERT INTO webhooks_generation (generation) VALUES (1);
