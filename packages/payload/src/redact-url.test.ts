import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isCredentialParam, redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it('hides the values of credential query parameters and keeps the rest byte for byte', () => {
    expect(redactUrl('https://example.com/hook?token=abc&page=2')).toBe(
      'https://example.com/hook?token=***&page=2',
    );
    expect(
      redactUrl(
        'https://example.com/h?API_KEY=k&access%5Ftoken=t&code=c&xcode=1&sig=s&q=a+b%20c&empty=&token=&flag',
      ),
    ).toBe(
      'https://example.com/h?API_KEY=***&access%5Ftoken=***&code=***&xcode=1&sig=***&q=a+b%20c&empty=&token=&flag',
    );
  });

  it('reads names as a server does: percent-decoded, `+` a space, a malformed one as written', () => {
    // `%6Bey` is `key`; `%E0` decodes to nothing, so the name is read as written.
    expect(redactUrl('https://e.com/?%6Bey=1&my+secret=2&%E0=3&%E0token=4')).toBe(
      'https://e.com/?%6Bey=***&my+secret=***&%E0=3&%E0token=***',
    );
  });

  it('hides the password of the authority, up to its last @', () => {
    expect(redactUrl('https://user:p@ss@example.com:8443/hook?page=2')).toBe(
      'https://user:***@example.com:8443/hook?page=2',
    );
    // No password, a port, an @ in the path: nothing to hide.
    for (const url of [
      'https://user@example.com/hook',
      'https://user:@example.com/hook',
      'https://example.com:8443/a@b',
      'https://example.com/hook',
    ]) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  it('leaves the fragment, which is never sent, and the path as they are', () => {
    expect(redactUrl('https://e.com/token=1/x?a=1&secret=2#token=3?key=4')).toBe(
      'https://e.com/token=1/x?a=1&secret=***#token=3?key=4',
    );
  });

  it('keeps a query of names that hold no credential as it is, and is idempotent', () => {
    const plain = fc.stringMatching(/^[a-z_]{1,8}$/).filter((name) => !isCredentialParam(name));
    const value = fc.stringMatching(/^[A-Za-z0-9%+._~-]{0,12}$/);
    fc.assert(
      fc.property(fc.array(fc.tuple(plain, value), { maxLength: 6 }), (pairs) => {
        const url = `https://example.com/hook?${pairs.map(([n, v]) => `${n}=${v}`).join('&')}`;
        expect(redactUrl(url)).toBe(url);
      }),
    );
    fc.assert(
      fc.property(fc.string(), (url) => {
        expect(redactUrl(redactUrl(url))).toBe(redactUrl(url));
      }),
    );
  });
});

describe('isCredentialParam', () => {
  it.each(['token', 'access_token', 'api_key', 'apikey', 'X-Amz-Signature', 'code', 'SIG'])(
    '%s carries credentials',
    (name) => {
      expect(isCredentialParam(name)).toBe(true);
    },
  );

  it.each(['page', 'id', 'event', 'zipcode', 'signal'])('%s does not', (name) => {
    expect(isCredentialParam(name)).toBe(false);
  });
});
