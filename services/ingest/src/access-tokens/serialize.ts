import type { AccessTokenResource, Role, RoleResource } from '@herald/contract';
import type { ApiToken } from '@herald/store';
import { lastAccess } from './last-access.js';

/**
 * The access_token resource (docs/api.md, The access token resource), DatoCMS's shape. `value`,
 * the token itself, only in the answers of creation and regeneration: Herald keeps a hash.
 */
export function serializeAccessToken(
  token: ApiToken,
  value: string | null = null,
): AccessTokenResource {
  const used = lastAccess(token.lastUsedAt, new Date());
  return {
    type: 'access_token' as const,
    id: token.id,
    attributes: {
      name: token.name,
      token: value,
      hardcoded_type: token.hardcodedType,
      can_access_cma: true,
      can_access_cda: false,
      can_access_cda_preview: false,
      last_cma_access: used,
      last_cda_access: 'never' as const,
      // Extensions.
      token_hint: token.hint,
      last_used_at: token.lastUsedAt?.toISOString() ?? null,
      created_at: token.createdAt.toISOString(),
      updated_at: token.updatedAt.toISOString(),
    },
    relationships: { role: { data: { type: 'role' as const, id: token.role } } },
  };
}

/** What each built-in role may do (docs/api.md, Tokens and roles). */
const ROLE_ATTRIBUTES: Record<Role, { description: string; admin: boolean }> = {
  admin: { description: 'Every endpoint', admin: true },
  read_only: { description: 'GET /items and GET /items/:id', admin: false },
  producer: { description: 'POST /events', admin: false },
};

/** The role resource of a built-in role; its id is its name, which never changes. */
export function serializeRole(role: Role): RoleResource {
  const { description, admin } = ROLE_ATTRIBUTES[role];
  return {
    type: 'role' as const,
    id: role,
    attributes: {
      name: role,
      can_manage_webhooks: admin,
      can_manage_access_tokens: admin,
      // Extension.
      description,
    },
    relationships: { inherits_permissions_from: { data: [] } },
  };
}
