import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { ConfigError, commonEnv, httpEnv, parseEnv } from './config.js';

const Schema = z.object({ ...commonEnv, ...httpEnv });

describe('parseEnv', () => {
  it('applies defaults when nothing is set', () => {
    const config = parseEnv(Schema, {});
    expect(config.PORT).toBe(3000);
    expect(config.RATE_LIMIT_WINDOW_MS).toBe(3000);
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.MIGRATE_ON_START).toBe(true);
    expect(config.SHUTDOWN_READINESS_DELAY_MS).toBe(5000);
    expect(config.SHUTDOWN_GRACE_MS).toBe(10_000);
    expect(config.ACCESS_LOG_SAMPLE_EVENTS).toBe(1);
  });

  it('treats empty strings as unset', () => {
    expect(parseEnv(Schema, { PORT: '' }).PORT).toBe(3000);
  });

  it('rejects wrong values with a message naming each variable', () => {
    let error: unknown;
    try {
      parseEnv(Schema, { PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/PORT: .*\(got "eighty"\)/);
    expect(message).toMatch(/DATABASE_URL: must be a URL \(postgres: or postgresql:\)/);
    expect(message).toMatch(/LOG_LEVEL: /);
    expect((error as ConfigError).problems).toHaveLength(3);
  });

  it('rejects a short admin token and out-of-range numbers', () => {
    expect(() => parseEnv(Schema, { HERALD_ADMIN_TOKEN: 'short' })).toThrow(
      /HERALD_ADMIN_TOKEN: must be at least 24/,
    );
    expect(() => parseEnv(Schema, { PORT: '70000' })).toThrow(/PORT/);
    expect(() => parseEnv(Schema, { MIGRATE_ON_START: 'yes' })).toThrow(/MIGRATE_ON_START/);
    expect(() => parseEnv(Schema, { REDIS_PREFIX: 'has space' })).toThrow(/REDIS_PREFIX/);
    expect(() => parseEnv(Schema, { ACCESS_LOG_SAMPLE_EVENTS: '1.5' })).toThrow(
      /ACCESS_LOG_SAMPLE_EVENTS/,
    );
    expect(() => parseEnv(Schema, { SHUTDOWN_READINESS_DELAY_MS: '-1' })).toThrow(
      /SHUTDOWN_READINESS_DELAY_MS/,
    );
  });
});

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port seeds, and URLs whose credentials and TLS every node shares', () => {
    expect(parseEnv(Schema, { REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,' })).toMatchObject(
      {
        REDIS_CLUSTER_NODES: {
          nodes: [
            { host: '10.0.0.1', port: 7000 },
            { host: 'redis-b', port: 7001 },
          ],
          tls: false,
        },
      },
    );
    expect(
      parseEnv(Schema, {
        REDIS_CLUSTER_NODES: 'rediss://herald:p%40ss@a:7000,b:7001,rediss://herald:p%40ss@[::1]',
      }).REDIS_CLUSTER_NODES,
    ).toEqual({
      nodes: [
        { host: 'a', port: 7000 },
        { host: 'b', port: 7001 },
        { host: '::1', port: 6379 },
      ],
      username: 'herald',
      password: 'p@ss',
      tls: true,
    });
  });

  it('rejects what is not a node, and URLs that disagree', () => {
    for (const value of [',', 'a:0', 'http://a:7000', 'redis://:one@a:1,redis://:two@b:2']) {
      let error: unknown;
      try {
        parseEnv(Schema, { REDIS_CLUSTER_NODES: value });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems[0]).toMatch(/^REDIS_CLUSTER_NODES: /);
    }
  });

  it('never throws anything but a ConfigError, whatever the value', () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        try {
          parseEnv(Schema, { REDIS_CLUSTER_NODES: value });
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
        }
      }),
    );
  });
});
