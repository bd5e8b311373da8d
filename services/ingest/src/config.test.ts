import { describe, expect, it } from 'vitest';
import { checkAddress } from '@herald/contract';
import { ConfigError } from '@herald/runtime';
import { loadConfig } from './config.js';

describe('SSRF_ALLOW_CIDRS', () => {
  it('defaults to no exemption', () => {
    const config = loadConfig({});
    expect(config.SSRF_ALLOW_CIDRS).toEqual([]);
  });

  it('parses a list that then lifts the block', () => {
    const config = loadConfig({ SSRF_ALLOW_CIDRS: '127.0.0.0/8, ::1/128' });
    expect(checkAddress('127.0.0.1', config.SSRF_ALLOW_CIDRS)).toEqual({ blocked: false });
    expect(checkAddress('::1', config.SSRF_ALLOW_CIDRS)).toEqual({ blocked: false });
  });

  it('names the variable and the bad entry', () => {
    expect(() => loadConfig({ SSRF_ALLOW_CIDRS: '127.0.0.0/8,localhost' })).toThrow(ConfigError);
    expect(() => loadConfig({ SSRF_ALLOW_CIDRS: '127.0.0.0/8,localhost' })).toThrow(
      /SSRF_ALLOW_CIDRS: "localhost"/,
    );
  });
});
