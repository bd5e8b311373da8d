import type { RequestHandler } from 'express';
import { z } from 'zod';
import { AccessTokenResource } from '@herald/contract';
import { context } from '@herald/runtime';
import { revokeToken } from '@herald/store';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import { refusedChange, type AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';
import { parseQuery } from '../validation/query-params.js';

// DatoCMS's parameters name who inherits what the token created; Herald's tokens own nothing.
const DestroyQuery = z
  .object({
    destination_user_type: z.string().optional(),
    destination_user_id: z.string().optional(),
  })
  .strict();

export const destroyAccessTokenOperation = accessTokensOperation('delete', '/access_tokens/{id}', {
  summary: 'Revoke a token',
  query: DestroyQuery,
  responses: { 200: dataAnswer('The token, revoked', AccessTokenResource) },
  errors: ['NOT_FOUND', 'LAST_ADMIN_TOKEN'],
});

/**
 * DELETE /access_tokens/:id → 200 with the token, revoked: it stops working at once on this
 * process (within AUTH_CACHE_TTL_MS on the others). 422 LAST_ADMIN_TOKEN for the last admin one.
 */
export function destroyAccessTokenRoute(
  deps: AccessTokenRouteDeps,
): RequestHandler<{ id: string }> {
  return async (req, res) => {
    parseQuery(DestroyQuery, context(res).query);
    const change = await revokeToken(deps.db, req.params.id);
    if (!change.ok) throw refusedChange(req.params.id, change);
    deps.tokens?.forget();
    res.json({ data: serializeAccessToken(change.token) });
  };
}
