import { describe, expect, it } from 'vitest';
import { checkAddress, parseCidrList } from './ip-ranges.js';

describe('checkAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.1', 'documentation'],
    ['203.0.113.1', 'documentation'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['2001::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
  ])('%s is refused as %s', (ip, kind) => {
    const check = checkAddress(ip);
    expect(check).toMatchObject({ blocked: true, kind });
    if (check.blocked) expect(check.reason).toContain(kind);
  });

  it('names the setting that lifts a refusal, with an entry that does', () => {
    for (const [ip, entry] of [
      ['10.1.2.3', '10.1.2.3/32'],
      ['::1', '::1/128'],
      ['::ffff:127.0.0.1', '127.0.0.1/32'],
      ['2002:c0a8:101::', '192.168.1.1/32'],
    ] as const) {
      const check = checkAddress(ip);
      expect(check.blocked && check.reason).toMatch(`add ${entry} to SSRF_ALLOW_CIDRS to allow it`);
      expect(checkAddress(ip, parseCidrList(entry))).toEqual({ blocked: false });
    }
  });

  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '2002:808:808::1',
    '64:ff9b::8.8.8.8',
  ])('%s is allowed', (ip) => {
    expect(checkAddress(ip)).toEqual({ blocked: false });
  });

  it('refuses what is not an IP address', () => {
    expect(checkAddress('example.com')).toMatchObject({ blocked: true });
  });

  it('lets the allow-list lift a block, including for embedding IPv6 forms', () => {
    const allow = parseCidrList('127.0.0.0/8, ::1/128 10.0.0.5');
    expect(checkAddress('127.0.0.1', allow)).toEqual({ blocked: false });
    expect(checkAddress('::1', allow)).toEqual({ blocked: false });
    expect(checkAddress('::ffff:127.0.0.1', allow)).toEqual({ blocked: false });
    expect(checkAddress('10.0.0.5', allow)).toEqual({ blocked: false });
    expect(checkAddress('10.0.0.6', allow)).toMatchObject({ blocked: true, kind: 'private' });
    expect(checkAddress('169.254.169.254', allow)).toMatchObject({ blocked: true });
  });
});

describe('parseCidrList', () => {
  it('parses an empty list', () => {
    expect(parseCidrList('')).toEqual([]);
  });
  it('names a bad entry', () => {
    expect(() => parseCidrList('127.0.0.0/8,nope')).toThrow(/"nope"/);
    expect(() => parseCidrList('10.0.0.0/33')).toThrow(/10\.0\.0\.0\/33/);
  });
});
