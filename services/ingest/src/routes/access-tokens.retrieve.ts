import type { RequestHandler } from 'express';
import { z } from 'zod';
import { AccessTokenResource } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';
import { findToken } from '@herald/store';
import { tokenNotFound, type AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';

export const retrieveAccessTokenOperation: ApiOperation = {
  method: 'get',
  path: '/access_tokens/{id}',
  summary: 'One token',
  tag: 'Access tokens',
  access: { roles: [] },
  responses: {
    200: { description: 'The token', schema: z.strictObject({ data: AccessTokenResource }) },
  },
  errors: ['NOT_FOUND'],
};

/** GET /access_tokens/:id → 200 without the value (only its hint), or 404. */
export function retrieveAccessTokenRoute(
  deps: AccessTokenRouteDeps,
): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const token = await findToken(deps.db, req.params.id);
    if (!token) throw tokenNotFound(req.params.id);
    res.json({ data: serializeAccessToken(token) });
  };
}
