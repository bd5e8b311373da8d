-- Each webhook's endpoint health policy (extension, issue #14): the deployment's defaults
-- (DELIVERY_CIRCUIT_*, DELIVERY_DISABLE_AFTER_FAILING_MS) unless set here, and a rate limit.
-- Keys: rate_limit_per_second, circuit_failures, circuit_cooldown_ms, disable_after_failing_ms;
-- absent means the default.
ALTER TABLE webhooks ADD COLUMN delivery_policy json NOT NULL DEFAULT '{}';

-- The circuit breaker's parameters in effect at the last attempt recorded (the webhook's policy,
-- else the deployment's), so that the statement recording attempts can apply them.
ALTER TABLE webhook_health ADD COLUMN circuit_threshold integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_health ADD COLUMN circuit_cooldown_ms double precision NOT NULL DEFAULT 0;
