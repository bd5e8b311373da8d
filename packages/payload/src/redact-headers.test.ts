import { describe, expect, it } from 'vitest';
import { isCredentialHeader, redactHeaders } from './redact-headers.js';

describe('redactHeaders', () => {
  it('hides the values of credential headers, whatever their case, and keeps the rest in order', () => {
    const sent = {
      'Content-Type': 'application/json',
      'X-Api-Key': 'k-123',
      'api-key': 'k-456',
      'X-AUTH-TOKEN': 't-1',
      'X-Access-Token': 't-2',
      Cookie: 'sid=abc',
      'Client-Secret': 's',
      'X-Hub-Signature': 'sha256=abc',
      'X-Team': 'content',
      'webhook-id': '42',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,abc',
    };
    const redacted = redactHeaders(sent, []);
    expect(Object.keys(redacted)).toEqual(Object.keys(sent));
    expect(redacted).toEqual({
      'Content-Type': 'application/json',
      'X-Api-Key': '***',
      'api-key': '***',
      'X-AUTH-TOKEN': '***',
      'X-Access-Token': '***',
      Cookie: '***',
      'Client-Secret': '***',
      'X-Hub-Signature': '***',
      'X-Team': 'content',
      // Herald's own Standard Webhooks headers: receivers compare them.
      'webhook-id': '42',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,abc',
    });
  });

  it('keeps a known authorization scheme, and nothing of a value without one', () => {
    expect(
      redactHeaders(
        { Authorization: 'Bearer abc.def', 'Proxy-Authorization': 'basic dXNlcjpwYXNz' },
        [],
      ),
    ).toEqual({ Authorization: 'Bearer ***', 'Proxy-Authorization': 'basic ***' });
    // A bare key, or a first word that is not a scheme, may be the secret itself.
    expect(redactHeaders({ authorization: 'sk_live_123' }, [])).toEqual({ authorization: '***' });
    expect(redactHeaders({ Authorization: 'sk_live_123 extra' }, [])).toEqual({
      Authorization: '***',
    });
    expect(redactHeaders({ Authorization: 'Bearer' }, [])).toEqual({ Authorization: '***' });
  });

  it("hides the webhook's own redact_headers, matched in any case", () => {
    expect(
      redactHeaders({ 'X-Tenant': 't-7', 'X-Team': 'content', 'webhook-signature': 'v1,abc' }, [
        'x-TENANT',
        'Webhook-Signature',
      ]),
    ).toEqual({ 'X-Tenant': '***', 'X-Team': 'content', 'webhook-signature': '***' });
  });
});

describe('isCredentialHeader', () => {
  const credentials = [
    'Authorization',
    'Proxy-Authorization',
    'Cookie',
    'X-Api-Key',
    'Api-Key',
    'apikey',
    'X-Auth-Token',
    'X-Access-Token',
    'Private-Token',
    'X-Session-Id',
    'X-Password',
    'X-Credentials',
    'X-Jwt',
  ];
  const others = [
    'Content-Type',
    'User-Agent',
    'X-Team',
    'X-Request-Id',
    'webhook-id',
    'Webhook-Timestamp',
    'webhook-signature',
  ];

  it.each([
    ...credentials.map((name) => [name, true] as const),
    ...others.map((name) => [name, false] as const),
  ])('%s carries credentials: %s', (name, carries) => {
    expect(isCredentialHeader(name)).toBe(carries);
  });
});
