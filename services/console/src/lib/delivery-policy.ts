import type { DeliveryPolicy } from '@herald/contract/tables';
import type { FieldProblem } from './errors.js';

/**
 * The webhook form's `delivery_policy` (docs/api.md, The webhook resource): four numbers, each
 * empty for the deployment's default. The ranges mirror the server's, so a mistake is said as it
 * is typed; the server still validates.
 */
type PolicyKey = keyof DeliveryPolicy;

interface PolicyField {
  key: PolicyKey;
  label: string;
  min: number;
  max: number;
  integer: boolean;
  /** A duration in milliseconds (the form says it in words beside the number). */
  ms: boolean;
  hint: string;
}

export const POLICY_FIELDS: readonly PolicyField[] = [
  {
    key: 'rate_limit_per_second',
    label: 'Rate limit (requests per second)',
    min: 0.01,
    max: 10_000,
    integer: false,
    ms: false,
    hint: 'Across every delivery process. Empty: no limit.',
  },
  {
    key: 'circuit_failures',
    label: 'Open the circuit after (failures in a row)',
    min: 0,
    max: 1_000_000,
    integer: true,
    ms: false,
    hint: '0 turns the circuit breaker off. Empty: the deployment default (10).',
  },
  {
    key: 'circuit_cooldown_ms',
    label: 'Circuit cool-down (ms)',
    min: 100,
    max: 86_400_000,
    integer: true,
    ms: true,
    hint: 'How long calls wait before a probe. Empty: the deployment default (60000, 1 min).',
  },
  {
    key: 'disable_after_failing_ms',
    label: 'Disable after failing for (ms)',
    min: 0,
    max: 365 * 86_400_000,
    integer: true,
    ms: true,
    hint: 'Every attempt failed for this long: the webhook is disabled. 0: never. Empty: the deployment default (5 days).',
  },
];

/** The policy as typed, one string per key ('' for the default). */
export type PolicyForm = Record<PolicyKey, string>;

export function policyForm(policy: DeliveryPolicy | undefined): PolicyForm {
  const form = {} as PolicyForm;
  for (const { key } of POLICY_FIELDS) {
    const value = policy?.[key];
    form[key] = value === null || value === undefined ? '' : String(value);
  }
  return form;
}

/** The keys that are set, as numbers; the empty ones are left out (the default). */
export function policyFromForm(form: PolicyForm): DeliveryPolicy {
  const policy: DeliveryPolicy = {};
  for (const { key } of POLICY_FIELDS) {
    if (form[key].trim() !== '') policy[key] = Number(form[key].trim());
  }
  return policy;
}

/** What is wrong with the typed policy, by field path (`delivery_policy.circuit_failures`). */
export function policyProblems(form: PolicyForm): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const { key, min, max, integer } of POLICY_FIELDS) {
    if (form[key].trim() === '') continue;
    if (!isInRange(form[key], { min, max, integer })) {
      problems.push({
        field: `delivery_policy.${key}`,
        code: 'VALIDATION_FORMAT',
        message: `Must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}, or empty for the default.`,
      });
    }
  }
  return problems;
}

/** Whether typed text is a plain decimal number (no sign or exponent) in [min, max]. */
export function isInRange(
  text: string,
  { min, max, integer }: { min: number; max: number; integer: boolean },
): boolean {
  const trimmed = text.trim();
  const value = Number(trimmed);
  return (
    /^\d+(\.\d+)?$/.test(trimmed) &&
    (!integer || Number.isInteger(value)) &&
    value >= min &&
    value <= max
  );
}

/** "= 5 d", "= 1.5 min": a typed number of milliseconds in words; '' when it is not one. */
export function describeMs(text: string): string {
  const value = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) return '';
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) {
    if (value >= size) return `= ${Math.round((value / size) * 10) / 10} ${unit}`;
  }
  return `= ${value} ms`;
}
