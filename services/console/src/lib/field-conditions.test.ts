import { describe, expect, it } from 'vitest';
import { operandFromText, operandText, typedOperand } from './field-conditions.js';

describe('field condition operands', () => {
  it('reads typed text in the forms GET /items takes', () => {
    expect(typedOperand('in', 'a, b,, c ')).toEqual(['a', 'b', 'c']);
    expect(typedOperand('not_in', '')).toEqual([]);
    expect(typedOperand('matches', '^Breaking')).toEqual({ pattern: '^Breaking' });
    expect(typedOperand('near', '45.4, 9.2, 1000')).toEqual({
      latitude: '45.4',
      longitude: '9.2',
      radius: '1000',
    });
    expect(typedOperand('gt', '10')).toBe('10');
    expect(typedOperand('exists', 'true')).toBe('true');
  });

  it('reads a JSON object or list as JSON, and a pattern starting with [ as a pattern', () => {
    expect(operandFromText('matches', '{"pattern": "^a", "case_sensitive": true}')).toEqual({
      pattern: '^a',
      case_sensitive: true,
    });
    expect(operandFromText('in', '["a,b", "c"]')).toEqual(['a,b', 'c']);
    expect(operandFromText('eq', '["rec-1", "rec-2"]')).toEqual(['rec-1', 'rec-2']);
    expect(operandFromText('matches', '[1]')).toEqual({ pattern: '[1]' });
    expect(operandFromText('eq', '{not json')).toBe('{not json');
  });

  it('shows stored operands as text that reads back to the same condition', () => {
    // operator, stored operand, as shown, as read back (numbers and flags as a query string has them)
    const cases: [string, unknown, string, unknown][] = [
      ['gt', 10, '10', '10'],
      ['eq', 'hello', 'hello', 'hello'],
      ['eq', true, 'true', 'true'],
      ['eq', ['rec-1', 'rec-2'], '["rec-1","rec-2"]', ['rec-1', 'rec-2']],
      ['in', ['a', 'b'], 'a, b', ['a', 'b']],
      ['in', ['a,b', 'c'], '["a,b","c"]', ['a,b', 'c']],
      ['in', ['[1]'], '["[1]"]', ['[1]']],
      ['any_in', [], '', []],
      ['matches', '^Breaking', '^Breaking', { pattern: '^Breaking' }],
      ['matches', { pattern: '^a' }, '^a', { pattern: '^a' }],
      [
        'matches',
        { pattern: '^a', case_sensitive: true },
        '{"pattern":"^a","case_sensitive":true}',
        { pattern: '^a', case_sensitive: true },
      ],
      ['matches', { pattern: '[a-z]' }, '{"pattern":"[a-z]"}', { pattern: '[a-z]' }],
      [
        'near',
        { latitude: 45.4, longitude: 9.2, radius: 1000 },
        '45.4, 9.2, 1000',
        { latitude: '45.4', longitude: '9.2', radius: '1000' },
      ],
      ['exists', false, 'false', 'false'],
      ['eq', '{not an object}', '"{not an object}"', '{not an object}'],
    ];
    for (const [operator, stored, shown, read] of cases) {
      expect(operandText(operator, stored), `${operator} ${JSON.stringify(stored)}`).toBe(shown);
      expect(operandFromText(operator, shown), shown).toEqual(read);
    }
  });
});
