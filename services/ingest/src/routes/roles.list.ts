import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ROLES, RoleResource } from '@herald/contract';
import { context } from '@herald/runtime';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import { serializeRole } from '../access-tokens/serialize.js';
import { parseQuery } from '../validation/query-params.js';

export const listRolesOperation = accessTokensOperation('get', '/roles', {
  summary: 'The built-in roles',
  responses: { 200: dataAnswer('The roles', z.array(RoleResource)) },
});

/** GET /roles → 200: the three built-in roles, whose ids are their names. */
export function listRolesRoute(): RequestHandler {
  return (_req, res) => {
    parseQuery(z.object({}).strict(), context(res).query);
    res.json({ data: ROLES.map(serializeRole) });
  };
}
