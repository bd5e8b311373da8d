import { describe, expect, it } from 'vitest';
import { checkAddress } from '@herald/contract';
import { loadConfig } from './config.js';

describe('SSRF_ALLOW_CIDRS in the single process', () => {
  it('on the embedded default (no DATABASE_URL) allows loopback receivers, and says so', () => {
    const config = loadConfig({});
    expect(config.loopbackReceiversByDefault).toBe(true);
    expect(checkAddress('127.0.0.1', config.SSRF_ALLOW_CIDRS)).toEqual({ blocked: false });
    expect(checkAddress('::1', config.SSRF_ALLOW_CIDRS)).toEqual({ blocked: false });
    // Only loopback: the rest of the guard holds.
    expect(checkAddress('10.0.0.1', config.SSRF_ALLOW_CIDRS)).toMatchObject({ blocked: true });
    expect(checkAddress('169.254.169.254', config.SSRF_ALLOW_CIDRS)).toMatchObject({
      blocked: true,
    });
  });

  it('keeps the whole guard with DATABASE_URL, or when SSRF_ALLOW_CIDRS is set (none: no exemption)', () => {
    for (const env of [
      { DATABASE_URL: 'postgres://herald@127.0.0.1:5432/herald' },
      { SSRF_ALLOW_CIDRS: 'none' },
      { SSRF_ALLOW_CIDRS: '192.0.2.0/24' },
    ]) {
      const config = loadConfig(env);
      expect(config.loopbackReceiversByDefault).toBe(false);
      expect(checkAddress('127.0.0.1', config.SSRF_ALLOW_CIDRS)).toMatchObject({ blocked: true });
    }
  });
});
