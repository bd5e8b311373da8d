-- The delivery log's months are made and dropped by TypeScript (store/webhook-calls.ts:
-- createWebhookCallMonths, dropWebhookCallMonths; #30): upkeep on a schedule, not a hot path, and
-- readable beside the code that calls it. The functions that did it go. A process of an earlier
-- release still running fails its pruning pass until it is replaced (the sweeper logs it and tries
-- again at the next).
DROP FUNCTION IF EXISTS herald_create_webhook_call_partitions(timestamptz, integer);
DROP FUNCTION IF EXISTS herald_drop_webhook_call_partition(timestamptz);
DROP FUNCTION IF EXISTS herald_drop_empty_legacy_webhook_calls();
