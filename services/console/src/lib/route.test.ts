import { describe, expect, it } from 'vitest';
import { formatRoute, parseRoute } from './route.js';

describe('hash routes', () => {
  it('parses segments and parameters', () => {
    const route = parseRoute('#/calls/12?status=failed&webhook=3');
    expect(route.segments).toEqual(['calls', '12']);
    expect(route.params.get('status')).toBe('failed');
    expect(parseRoute('').segments).toEqual([]);
  });

  it('formats routes that parse back, dropping empty parameters', () => {
    const hash = formatRoute(['records', 'a/b'], { q: 'x y', version: '' });
    expect(hash).toBe('#/records/a%2Fb?q=x+y');
    const route = parseRoute(hash);
    expect(route.segments).toEqual(['records', 'a/b']);
    expect(route.params.get('q')).toBe('x y');
  });
});
