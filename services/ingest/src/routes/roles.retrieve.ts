import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, ROLES, RoleResource, isRole } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';
import { serializeRole } from '../access-tokens/serialize.js';

export const retrieveRoleOperation: ApiOperation = {
  method: 'get',
  path: '/roles/{id}',
  summary: 'One role',
  tag: 'Access tokens',
  access: { roles: [] },
  responses: {
    200: { description: 'The role', schema: z.strictObject({ data: RoleResource }) },
  },
  errors: ['NOT_FOUND'],
};

/** GET /roles/:id → 200, or 404 for anything but admin, read_only and producer. */
export function retrieveRoleRoute(): RequestHandler<{ id: string }> {
  return (req, res) => {
    const { id } = req.params;
    if (!isRole(id)) {
      throw new ApiError('NOT_FOUND', {
        message: `No role "${id}": the roles are ${ROLES.join(', ')}`,
        id,
      });
    }
    res.json({ data: serializeRole(id) });
  };
}
