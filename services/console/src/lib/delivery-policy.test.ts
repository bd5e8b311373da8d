import { describe, expect, it } from 'vitest';
import { describeMs, policyForm, policyFromForm, policyProblems } from './delivery-policy.js';

describe('delivery policy form', () => {
  it('round-trips a policy, leaving the defaults out', () => {
    const form = policyForm({ rate_limit_per_second: 2.5, circuit_failures: null });
    expect(form).toEqual({
      rate_limit_per_second: '2.5',
      circuit_failures: '',
      circuit_cooldown_ms: '',
      disable_after_failing_ms: '',
    });
    expect(policyFromForm(form)).toEqual({ rate_limit_per_second: 2.5 });
    expect(policyFromForm(policyForm(undefined))).toEqual({});
  });

  it('checks the documented ranges', () => {
    const ok = { ...policyForm({}), circuit_failures: '0', disable_after_failing_ms: '0' };
    expect(policyProblems(ok)).toEqual([]);
    const bad = {
      rate_limit_per_second: '0.001',
      circuit_failures: '1.5',
      circuit_cooldown_ms: '99',
      disable_after_failing_ms: '-1',
    };
    expect(policyProblems(bad).map((p) => p.field)).toEqual([
      'delivery_policy.rate_limit_per_second',
      'delivery_policy.circuit_failures',
      'delivery_policy.circuit_cooldown_ms',
      'delivery_policy.disable_after_failing_ms',
    ]);
    expect(policyProblems({ ...ok, rate_limit_per_second: '1e3' })).toHaveLength(1);
    expect(policyProblems({ ...ok, circuit_cooldown_ms: '86400001' })).toHaveLength(1);
  });

  it('says milliseconds in words', () => {
    expect(describeMs('432000000')).toBe('= 5 d');
    expect(describeMs('90000')).toBe('= 1.5 min');
    expect(describeMs('')).toBe('');
    expect(describeMs('abc')).toBe('');
  });
});
