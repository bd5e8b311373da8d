import { describe, expect, it } from 'vitest';
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
