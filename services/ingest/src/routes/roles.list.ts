import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ROLES, RoleResource } from '@herald/contract';
import { context, type ApiOperation } from '@herald/runtime';
import { serializeRole } from '../access-tokens/serialize.js';
import { parseQuery } from '../validation/query-params.js';

export const listRolesOperation: ApiOperation = {
  method: 'get',
  path: '/roles',
  summary: 'The built-in roles',
  tag: 'Access tokens',
  access: { roles: [] },
  responses: {
    200: { description: 'The roles', schema: z.strictObject({ data: z.array(RoleResource) }) },
  },
};

/** GET /roles → 200: the three built-in roles, whose ids are their names. */
export function listRolesRoute(): RequestHandler {
  return (_req, res) => {
    parseQuery(z.object({}).strict(), context(res).query);
    res.json({ data: ROLES.map(serializeRole) });
  };
}
