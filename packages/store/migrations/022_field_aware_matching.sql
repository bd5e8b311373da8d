-- Field-aware matching and changes in the payload (extension, issue #15; docs/api.md, Events
-- and filters, and What a webhook call sends).
--
-- events.previous_attributes: for an item event that came without a previous_entity, the
-- attributes of the version it replaced as Herald had stored them ('{}' when there was none):
-- the current version for create, update and delete, the published one for publish and
-- unpublish. Ingest writes the record in the same transaction as the event, so by the time the
-- event is matched the stored record is already the new version: the previous one can only be
-- read before the write, and it is captured there, in the statement (or transaction) that writes
-- it. It is kept in a column of its own, not in previous_entity, so that the payload's
-- previous_entity stays what the producer sent (absent when it sent none). NULL for other events
-- and for events stored before this migration (their changes are unknown).
-- events.record_status: the status an item create/update/publish/unpublish gives its record, as
-- the records upsert computes it (NULL for deletes and other events).
ALTER TABLE events ADD COLUMN previous_attributes jsonb, ADD COLUMN record_status text;

-- A webhook whose default payload carries `changes` (an RFC 6902 JSON Patch from the previous to
-- the new attributes).
ALTER TABLE webhooks ADD COLUMN payload_changes boolean NOT NULL DEFAULT false;

-- The capture: functions/herald_stored_record.sql, applied with this migration, and
-- herald_write_item_batch.sql.
