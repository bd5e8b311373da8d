import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ROLES } from '@herald/contract';
import { context } from '@herald/runtime';
import { serializeRole } from '../access-tokens/serialize.js';
import { parseQuery } from '../validation/query-params.js';

/** GET /roles → 200: the three built-in roles, whose ids are their names. */
export function listRolesRoute(): RequestHandler {
  return (_req, res) => {
    parseQuery(z.object({}).strict(), context(res).query);
    res.json({ data: ROLES.map(serializeRole) });
  };
}
