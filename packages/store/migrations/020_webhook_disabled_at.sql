-- When a webhook was disabled (extension, issue #14): re-enabling it offers to replay the events
-- that occurred meanwhile (PUT /webhooks/:id answers meta.replay_offer). NULL while enabled.
ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz;
-- Webhooks disabled before this release: since their last edit, the best known.
UPDATE webhooks SET disabled_at = updated_at WHERE NOT enabled;
