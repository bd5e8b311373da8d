/** API token roles (docs/api.md, Tokens and roles). */
export const ROLES = ['admin', 'read_only', 'producer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
