-- Leases of the delivery processes (issue #13). A process that matches events queues the first
-- attempts of the new calls in its own memory; those calls are held by it (webhook_calls.held_by)
-- while it lives, proven by a heartbeat here. The sweeper takes over only the calls of a holder
-- whose heartbeat stopped, so a backlog in a live process is never sent twice, and a dead one's
-- calls move on within a lease.
CREATE TABLE delivery_leases (
  id           text PRIMARY KEY,
  host         text NOT NULL,
  pid          integer NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- The lease holding a pending call in a process's memory; NULL once its job is in Redis or it
-- is finished. No foreign key: a lease row goes only after its calls were taken over.
ALTER TABLE webhook_calls ADD COLUMN held_by text;
-- Small: only the calls queued or in flight in some process.
CREATE INDEX webhook_calls_held ON webhook_calls (held_by) WHERE held_by IS NOT NULL;

-- The deployment's identity, one row, created here. It is also written under the Redis prefix at
-- start, so that a second deployment (another database) started on the same prefix is refused
-- instead of running, and finding nothing for, the first one's jobs.
CREATE TABLE deployment (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id         text NOT NULL DEFAULT gen_random_uuid()::text,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO deployment DEFAULT VALUES;
