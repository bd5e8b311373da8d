import type { RequestHandler } from 'express';
import { ApiError, ROLES, isRole } from '@herald/contract';
import { serializeRole } from '../access-tokens/serialize.js';

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
