import { describe, expect, it } from 'vitest';
import { parseDateTime } from './item-filters.js';

describe('parseDateTime', () => {
  it('keeps the years 0001–0099 (Date.UTC reads them as 1900–1999)', () => {
    expect(parseDateTime('2024-02-10T09:00:00.1234567+01:00')).toBe('2024-02-10T08:00:00.123456Z');
    expect(parseDateTime('0050-06-01T00:00:00Z')).toBe('0050-06-01T00:00:00.000000Z');
    expect(parseDateTime('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000000Z');
  });

  it('refuses an instant that a zone carries out of years 0001–9999', () => {
    expect(parseDateTime('9999-12-31T23:59:59-14:00')).toBeNull();
    expect(parseDateTime('0001-01-01T00:00:00+01:00')).toBeNull();
    expect(parseDateTime('9999-12-31T23:59:59Z')).toBe('9999-12-31T23:59:59.000000Z');
  });
});
