import { describe, expect, it } from 'vitest';
import { REGEX_MAX_QUANTIFIERS, REGEX_MAX_SIZE, regexCostProblem } from './regex-cost.js';

describe('regexCostProblem', () => {
  it('lets ordinary patterns through', () => {
    for (const pattern of [
      '^hel',
      'foo|bar',
      '(https?://)?example\\.com',
      '(ab?)+c',
      '(?:a|b)*c',
      '[a-z]{1,255}',
      '\\d{4}-\\d{2}-\\d{2}',
      '[[:alpha:]]+[]x]*',
      '(?=a)b',
      '\\m\\w+\\M',
      '\\x41{3}',
      '***=(((\\1)*)*',
      '(?q)(a+)+',
      '(?i)^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$',
      'a{', // not a bound: Postgres judges it
    ]) {
      expect(regexCostProblem(pattern), pattern).toBeNull();
    }
  });

  it('refuses back-references', () => {
    for (const pattern of ['(a)\\1', '^(.*)\\1\\1$', '(a)(b)\\2', '***:(x)\\1']) {
      expect(regexCostProblem(pattern), pattern).toMatch(/back-references/);
    }
  });

  it('refuses a repetition of something that repeats', () => {
    for (const pattern of [
      '(a{1,200}){1,200}b',
      '(a+)+',
      '(a*)*',
      '((a+))*',
      '(\\w+\\s?)*$',
      '(?:[a-z]{2,}){3}',
      '(?x) ( a + ) +', // expanded syntax: whitespace is not a character
      '(a+){2}',
    ]) {
      expect(regexCostProblem(pattern), pattern).toMatch(/repeated group/);
    }
    // Repeating nothing more than once is fine.
    expect(regexCostProblem('(a+)?')).toBeNull();
    expect(regexCostProblem('(a+){1}')).toBeNull();
    expect(regexCostProblem('(a?){3}')).toBeNull();
  });

  it(`refuses more than ${REGEX_MAX_QUANTIFIERS} quantifiers`, () => {
    expect(regexCostProblem('.*'.repeat(REGEX_MAX_QUANTIFIERS))).toBeNull();
    expect(regexCostProblem('.*'.repeat(REGEX_MAX_QUANTIFIERS + 1))).toMatch(/quantifiers/);
    expect(regexCostProblem(`${'a?'.repeat(200)}a{100}`)).toMatch(/quantifiers/);
  });

  it(`refuses more than ${REGEX_MAX_SIZE} atoms once bounded repetitions are expanded`, () => {
    expect(regexCostProblem('[a-f0-9]{1,100}'.repeat(10))).toBeNull();
    expect(regexCostProblem('.{1,100}'.repeat(11))).toMatch(/too large/);
    expect(regexCostProblem('(?:abcde){201}')).toMatch(/too large/);
    expect(regexCostProblem('x'.repeat(REGEX_MAX_SIZE + 1))).toMatch(/too large/);
    expect(regexCostProblem(Array.from({ length: 300 }, (_, i) => `w${i}`).join('|'))).toMatch(
      /too large/,
    );
  });
});
