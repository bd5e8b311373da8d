import { z } from 'zod';
import { ApiError, ROLES, isRole, type ErrorEntry, type Role } from '@herald/contract';
import { parse } from '../validation/zod-errors.js';

/**
 * The JSON:API shape of an access token request (docs/api.md, Access tokens), as the official
 * client sends it: attributes, and the role as a relationship.
 */
const AccessTokenDocument = z.object(
  {
    data: z
      .object(
        {
          type: z.literal('access_token', 'must be "access_token"'),
          id: z.string('must be a string').optional(),
          attributes: z.record(z.string(), z.unknown(), 'must be an object').optional(),
          relationships: z
            .object({
              role: z.object({ data: z.unknown() }, 'must be {"data": …}').strict().optional(),
            })
            .strict()
            .optional(),
          meta: z.unknown().optional(),
        },
        'must be one resource object',
      )
      .strict(),
  },
  'must be a JSON object {"data": {"type": "access_token", …}}',
);

/**
 * The request document as the OpenAPI document shows it: this shape, `attributes` as the route's
 * schema reads them.
 */
export const accessTokenDocument = (attributes: z.ZodObject) =>
  AccessTokenDocument.extend({
    data: AccessTokenDocument.shape.data.extend({ attributes: attributes.optional() }),
  });

/** The attributes every access token request may carry beside `name` (DatoCMS's surface flags). */
export const SurfaceFlags = {
  // Herald's tokens are all for its API; DatoCMS's CDA flags are taken and answered false.
  can_access_cma: z
    .literal(true, 'Herald tokens always access the API: true, or leave it out')
    .optional(),
  can_access_cda: z.boolean().optional(),
  can_access_cda_preview: z.boolean().optional(),
};

export interface AccessTokenDocument {
  attributes: Record<string, unknown>;
  /** `relationships.role.data` when sent: undefined when absent. */
  role: unknown;
}

/**
 * Reads `{"data": {"type": "access_token", "attributes": {...}, "relationships": {"role": …}}}`;
 * a body of another shape is INVALID_FORMAT naming where (docs/api.md, Documents). `id`: the URL's,
 * which data.id must equal when sent; none on creation, where ids are generated.
 */
export function readAccessTokenDocument(body: unknown, id?: string): AccessTokenDocument {
  const parsed = parse(AccessTokenDocument, body);
  if (parsed.issues) {
    const [issue] = parsed.issues;
    let path = issue?.path.map(String) ?? [];
    let message = issue?.message ?? 'is not an access_token document';
    if (issue?.code === 'unrecognized_keys') {
      path = [...path, issue.keys[0] ?? ''];
      message = 'is not a member of this document';
    }
    const field = path.join('.');
    throw new ApiError('INVALID_FORMAT', {
      message: `${field || 'The body'} ${message}`,
      ...(field ? { field } : {}),
    });
  }
  const data = parsed.value.data;
  if (id === undefined && data.id !== undefined) {
    throw new ApiError('INVALID_FORMAT', {
      message: 'Access token ids are generated; do not send data.id',
      field: 'data.id',
    });
  }
  if (id !== undefined && data.id !== undefined && data.id !== id) {
    throw new ApiError('INVALID_FORMAT', {
      message: `data.id must be the id in the URL ("${id}")`,
      field: 'data.id',
    });
  }
  return { attributes: data.attributes ?? {}, role: data.relationships?.role?.data };
}

/** The role a linkage names, or the INVALID_FIELD entry (field `role`) saying what is wrong. */
export function readRoleLinkage(linkage: unknown): { role: Role } | { problem: ErrorEntry } {
  const { type, id } = (linkage ?? {}) as { type?: unknown; id?: unknown };
  if (
    typeof linkage === 'object' &&
    linkage !== null &&
    !Array.isArray(linkage) &&
    type === 'role' &&
    typeof id === 'string' &&
    isRole(id)
  ) {
    return { role: id };
  }
  return {
    problem: ApiError.field(
      'role',
      linkage === undefined || linkage === null ? 'VALIDATION_REQUIRED' : 'VALIDATION_INCLUSION',
      `must be {"type": "role", "id": …} with the id of a role (GET /roles): ${ROLES.join(', ')}`,
    ),
  };
}
