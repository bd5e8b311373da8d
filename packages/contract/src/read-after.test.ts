import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from './errors.js';
import { decodeReadAfter, encodeReadAfter, parseLsn, readAfterOf } from './read-after.js';

const lsn = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

describe('the read-after token', () => {
  it('parses LSNs as Postgres prints them', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('16/B374D848')).toBe(0x16_b374d848n);
    expect(parseLsn('FFFFFFFF/FFFFFFFF')).toBe((1n << 64n) - 1n);
    expect(() => parseLsn('16B374D848')).toThrow();
    expect(() => parseLsn('1/2/3')).toThrow();
  });

  it('is base64url of a versioned LSN', () => {
    const token = encodeReadAfter(0x16_b374d848n);
    expect(Buffer.from(token, 'base64url').toString()).toBe('lsn1:16/B374D848');
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('decodes what it encodes, for every LSN', () => {
    fc.assert(fc.property(lsn, (value) => decodeReadAfter(encodeReadAfter(value)) === value));
  });

  it('has one spelling: anything else is refused', () => {
    const canonical = encodeReadAfter(0x16_b374d848n);
    const refused = [
      '',
      `${canonical}=`,
      `${canonical} `,
      `${canonical.slice(0, -1)}+`,
      Buffer.from('lsn1:016/B374D848').toString('base64url'),
      Buffer.from('lsn1:16/b374d848').toString('base64url'),
      Buffer.from('lsn2:16/B374D848').toString('base64url'),
      Buffer.from('lsn1:16/B374D848\n').toString('base64url'),
      Buffer.from('lsn1:123456789/0').toString('base64url'),
      'A'.repeat(65),
    ];
    for (const token of refused) expect(decodeReadAfter(token)).toBeUndefined();
    // Any string: refused, or the one spelling of what it decodes to.
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.base64String()), (token) => {
        const value = decodeReadAfter(token);
        return value === undefined || encodeReadAfter(value) === token;
      }),
    );
  });

  it('is a 400 INVALID_READ_AFTER_HEADER when the header is not a token', () => {
    expect(readAfterOf(undefined)).toBeUndefined();
    expect(readAfterOf(encodeReadAfter(42n))).toBe(42n);
    const token = encodeReadAfter(42n);
    for (const header of ['nope', [token, token], `${token}, ${token}`]) {
      let thrown: unknown;
      try {
        readAfterOf(header);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ApiError);
      expect((thrown as ApiError).status).toBe(400);
      expect((thrown as ApiError).entries[0]!.code).toBe('INVALID_READ_AFTER_HEADER');
    }
  });
});
