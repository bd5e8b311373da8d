-- Credentials in custom headers are kept out of the delivery log (API.md §4.4).
--
-- Extension attribute: header names (any case) whose values the call log keeps as `***`, beside
-- the credential-looking names redacted for every webhook (services/delivery/src/delivery/
-- redact-headers.ts holds that rule; the function below is its copy in SQL).
ALTER TABLE webhooks ADD COLUMN redact_headers json NOT NULL DEFAULT '[]';

-- Calls logged before this release kept every header but Authorization in clear (and an
-- Authorization value without a scheme, such as a bare API key, too): redact them in place.
CREATE FUNCTION herald_redacted_header_008(name text, value text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    -- Herald's own Standard Webhooks headers: receivers compare them, none is a secret.
    WHEN lower(name) IN ('webhook-id', 'webhook-timestamp', 'webhook-signature') THEN value
    WHEN name !~* '(token|secret|key|passw|pwd|auth|credential|session|cookie|signature|jwt)'
      THEN value
    -- An authorization header keeps its scheme when it is a known one.
    WHEN lower(name) IN ('authorization', 'proxy-authorization')
      AND value ~* '^(basic|bearer|digest|dpop|gnap|hoba|mutual|negotiate|ntlm|oauth|privatetoken|scram-sha-1|scram-sha-256|vapid|concealed|token|hawk|aws4-hmac-sha256)[[:blank:]]+[^[:blank:]]'
      THEN substring(value FROM '^[^[:blank:]]+') || ' ***'
    ELSE '***'
  END
$$;

UPDATE webhook_calls AS c
SET request_headers = redacted.headers
FROM (
  SELECT calls.id,
    json_object_agg(
      h.key,
      CASE
        WHEN json_typeof(h.value) = 'string'
          THEN to_json(herald_redacted_header_008(h.key, h.value #>> '{}'))
        ELSE h.value
      END
      ORDER BY h.n
    ) AS headers
  FROM webhook_calls AS calls,
    json_each(calls.request_headers) WITH ORDINALITY AS h(key, value, n)
  WHERE json_typeof(calls.request_headers) = 'object'
  GROUP BY calls.id
  -- Only rows holding a value in clear are rewritten (`Basic ***` stays as it is).
  HAVING bool_or(
    json_typeof(h.value) = 'string'
    AND herald_redacted_header_008(h.key, h.value #>> '{}') <> h.value #>> '{}'
  )
) AS redacted
WHERE c.id = redacted.id;

DROP FUNCTION herald_redacted_header_008(text, text);
