import { describe, expect, it } from 'vitest';
import { lastAccess } from './last-access.js';

// 2026-11-25 is a Wednesday: its week started on Monday 2026-11-23.
const now = new Date('2026-11-25T10:00:00Z');
const at = (iso: string) => lastAccess(new Date(iso), now);

describe('lastAccess', () => {
  it('is never without a use', () => {
    expect(lastAccess(null, now)).toBe('never');
  });

  it.for([
    ['2026-11-25T00:00:00Z', 'today'],
    ['2026-11-25T10:00:05Z', 'today'],
    ['2026-11-24T23:59:59Z', 'yesterday'],
    ['2026-11-23T00:00:00Z', 'this_week'],
    ['2026-11-22T23:59:59Z', 'last_week'],
    ['2026-11-16T00:00:00Z', 'last_week'],
    ['2026-11-15T23:59:59Z', 'this_month'],
    ['2026-11-01T00:00:00Z', 'this_month'],
    ['2026-10-31T23:59:59Z', 'last_month'],
    ['2026-10-01T00:00:00Z', 'last_month'],
    ['2026-09-30T23:59:59Z', 'never'],
  ] as const)('%s is %s', ([iso, expected]) => {
    expect(at(iso)).toBe(expected);
  });

  it('says yesterday on a Monday for the Sunday before, and last week for the days before it', () => {
    const monday = new Date('2026-11-23T08:00:00Z');
    expect(lastAccess(new Date('2026-11-22T12:00:00Z'), monday)).toBe('yesterday');
    expect(lastAccess(new Date('2026-11-21T12:00:00Z'), monday)).toBe('last_week');
  });

  it('counts months across a year', () => {
    const january = new Date('2027-01-20T00:00:00Z');
    expect(lastAccess(new Date('2026-12-02T00:00:00Z'), january)).toBe('last_month');
    expect(lastAccess(new Date('2026-11-30T00:00:00Z'), january)).toBe('never');
  });
});
