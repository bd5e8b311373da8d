/**
 * Which request headers the call log keeps as `***` (docs/api.md, The webhook call resource).
 * Migration 008_redact_credential_headers.sql applies the same rule, in SQL, to calls logged before
 * it: change both together.
 */

/**
 * Names that carry credentials: Authorization, Proxy-Authorization, Cookie, X-Api-Key, Api-Key,
 * X-Auth-Token, X-Access-Token, Private-Token, X-Hub-Signature, Client-Secret, X-Session-Id…
 * Errs towards hiding: a name such as X-Author or Idempotency-Key is redacted too.
 */
const CREDENTIAL_NAME = /token|secret|key|passw|pwd|auth|credential|session|cookie|signature|jwt/i;

/**
 * Herald's own Standard Webhooks headers: receivers compare them to what they got, and none is a
 * secret (the signature is an HMAC of the body, not the key). A webhook may still list them.
 */
const SIGNATURE_HEADERS = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature']);

/** Authorization schemes kept before `***` (`Bearer ***`): the IANA registry and common others. */
const AUTH_SCHEME =
  /^(basic|bearer|digest|dpop|gnap|hoba|mutual|negotiate|ntlm|oauth|privatetoken|scram-sha-1|scram-sha-256|vapid|concealed|token|hawk|aws4-hmac-sha256)[ \t]+[^ \t]/i;

/** True when a name (of a header, or of a URL's query parameter) looks like it holds a credential. */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name);
}

/** True when a header of this name has its value redacted for every webhook. */
export function isCredentialHeader(name: string): boolean {
  return !SIGNATURE_HEADERS.has(name.toLowerCase()) && isCredentialName(name);
}

/**
 * The logged form of a redacted value: `***`, or `<scheme> ***` for an authorization header with
 * a known scheme. A value with an unknown first word keeps nothing of it: that word may be the
 * secret itself (a bare API key).
 */
function redactedValue(name: string, value: string): string {
  if (/^(proxy-)?authorization$/i.test(name)) {
    const scheme = AUTH_SCHEME.exec(value);
    if (scheme) return `${scheme[1]} ***`;
  }
  return '***';
}

/**
 * The headers as the call log stores them: credential names (isCredentialHeader) and the
 * webhook's own `redact_headers` (any case) redacted, the rest as sent, in the same order.
 */
export function redactHeaders(
  headers: Readonly<Record<string, string>>,
  redactNames: readonly string[],
): Record<string, string> {
  const listed = new Set(redactNames.map((name) => name.toLowerCase()));
  const redacted: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    redacted[name] =
      isCredentialHeader(name) || listed.has(name.toLowerCase())
        ? redactedValue(name, value)
        : value;
  }
  return redacted;
}
