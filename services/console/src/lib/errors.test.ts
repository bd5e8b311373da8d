import { describe, expect, it } from 'vitest';
import {
  describeFailure,
  fieldProblems,
  problemsUnder,
  readErrorEntries,
  unclaimedProblems,
} from './errors.js';

const envelope = {
  data: [
    {
      id: 'abc123',
      type: 'api_error',
      attributes: {
        code: 'INVALID_FIELD',
        details: { field: 'events.1.event_types.0', code: 'VALIDATION_INCLUSION', message: 'nope' },
      },
    },
    {
      id: 'abc124',
      type: 'api_error',
      attributes: {
        code: 'INVALID_ATTRIBUTES',
        details: { field: 'colour', message: 'Unknown attribute "colour"' },
      },
    },
    {
      id: 'x',
      type: 'api_error',
      attributes: { code: 'INVALID_FIELD', details: { field: 'url' } },
    },
  ],
};

describe('error envelope', () => {
  it('reads entries and turns field errors into problems keyed by path', () => {
    const entries = readErrorEntries(envelope);
    expect(entries.map((e) => e.code)).toEqual([
      'INVALID_FIELD',
      'INVALID_ATTRIBUTES',
      'INVALID_FIELD',
    ]);
    expect(fieldProblems(entries)).toEqual([
      { field: 'events.1.event_types.0', code: 'VALIDATION_INCLUSION', message: 'nope' },
      { field: 'colour', code: 'INVALID_ATTRIBUTES', message: 'Unknown attribute "colour"' },
      { field: 'url', code: 'INVALID_FIELD', message: 'INVALID_FIELD' },
    ]);
  });

  it('ignores what is not the envelope', () => {
    expect(readErrorEntries('oops')).toEqual([]);
    expect(readErrorEntries({ errors: [] })).toEqual([]);
    expect(readErrorEntries({ data: [null, { attributes: { code: 1 } }] })).toEqual([]);
  });

  it('finds problems under a path prefix, not under a sibling with the same start', () => {
    const problems = fieldProblems(readErrorEntries(envelope));
    expect(problemsUnder(problems, 'events').map((p) => p.field)).toEqual([
      'events.1.event_types.0',
    ]);
    expect(problemsUnder(problems, 'events.1').length).toBe(1);
    expect(problemsUnder(problems, 'events.10').length).toBe(0);
    expect(problemsUnder(problems, 'events', { exact: true }).length).toBe(0);
    expect(unclaimedProblems(problems, ['events', 'url']).map((p) => p.field)).toEqual(['colour']);
  });

  it('says 401 and 403 in words a person can act on', () => {
    expect(describeFailure(401, [{ code: 'INVALID_AUTHORIZATION_HEADER', details: {} }])).toMatch(
      /refused this API token \(401\)/,
    );
    expect(describeFailure(403, [{ code: 'INSUFFICIENT_PERMISSIONS', details: {} }])).toMatch(
      /admin token/,
    );
    expect(describeFailure(0, [])).toMatch(/Could not reach Herald/);
    expect(describeFailure(422, [{ code: 'INVALID_FILTER', details: { message: 'bad' } }])).toBe(
      'INVALID_FILTER (422): bad',
    );
  });
});
