import { z } from 'zod';

/** API token roles (docs/api.md, Tokens and roles); each is also the id of its `role` resource. */
export const ROLES = ['admin', 'read_only', 'producer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/**
 * An API token's name (docs/api.md, The access token resource), as the API and the CLI take it:
 * trimmed, 1–255 characters, no control characters (the CLI lists tokens one a line).
 */
export const AccessTokenName = z
  .string()
  .trim()
  .min(1, 'must not be blank')
  .max(255, 'must be at most 255 characters')
  .regex(/^\P{Cc}*$/u, 'must not hold control characters (tab, newline…)');
