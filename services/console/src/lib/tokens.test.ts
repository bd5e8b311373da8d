import { describe, expect, it } from 'vitest';
import { accessTokenBody } from './tokens.js';

describe('accessTokenBody', () => {
  it('names the role as a relationship, as the official client sends it, and trims the name', () => {
    expect(accessTokenBody('  CMS publisher ', 'producer')).toEqual({
      data: {
        type: 'access_token',
        attributes: { name: 'CMS publisher' },
        relationships: { role: { data: { type: 'role', id: 'producer' } } },
      },
    });
  });
});
