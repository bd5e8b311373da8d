-- Credentials in a webhook's URL are kept out of the call log, as those in its headers are (008;
-- docs/api.md, The webhook call resource): the value of a query parameter whose name looks like a
-- credential, and the password of a `user:password@` authority, are stored as `***`.
--
-- Calls and attempts logged before this release kept the URL as sent: redact them in place.
-- packages/payload/src/redact-url.ts holds the rule; the function below is its copy in SQL, which
-- reads query names as they were written (the rule also tries them percent-decoded).
CREATE FUNCTION herald_redacted_url_026(url text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT
    -- The user ends at the authority's first `:`, the password at its last `@`.
    regexp_replace(parts[1], '^([A-Za-z][A-Za-z0-9+.-]*://[^/\\:]*):[^/\\]+@', '\1:***@')
    || coalesce(
      '?' || regexp_replace(
        parts[2],
        '(^|&)([^=&]*(token|secret|key|passw|pwd|auth|credential|session|cookie|signature|jwt)[^=&]*|code|sig)=[^&]+',
        '\1\2=***',
        'gi'
      ),
      ''
    )
    || coalesce(parts[3], '')
  FROM (SELECT regexp_match(url, '^([^?#]*)(?:\?([^#]*))?(#.*)?$') AS parts) AS split
$$;

UPDATE webhook_calls
SET request_url = herald_redacted_url_026(request_url)
WHERE request_url ~ '[?@]' AND herald_redacted_url_026(request_url) <> request_url;

UPDATE webhook_call_attempts
SET request_url = herald_redacted_url_026(request_url)
WHERE request_url ~ '[?@]' AND herald_redacted_url_026(request_url) <> request_url;

DROP FUNCTION herald_redacted_url_026(text);
