import type { RequestHandler } from 'express';
import { ApiError, ROLES, RoleResource, isRole } from '@herald/contract';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import { serializeRole } from '../access-tokens/serialize.js';

export const retrieveRoleOperation = accessTokensOperation('get', '/roles/{id}', {
  summary: 'One role',
  responses: { 200: dataAnswer('The role', RoleResource) },
  errors: ['NOT_FOUND'],
});

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
