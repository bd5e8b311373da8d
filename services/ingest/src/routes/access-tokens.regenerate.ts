import type { RequestHandler } from 'express';
import { AccessTokenResource } from '@herald/contract';
import { regenerateToken } from '@herald/store';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import { refusedChange, type AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';

export const regenerateAccessTokenOperation = accessTokensOperation(
  'post',
  '/access_tokens/{id}/regenerate_token',
  {
    summary: "Replace the token's value",
    responses: {
      200: dataAnswer('The token and its new value, shown this once', AccessTokenResource),
    },
    errors: ['NOT_FOUND', 'NON_EDITABLE_ACCESS_TOKEN'],
  },
);

/**
 * POST /access_tokens/:id/regenerate_token → 200 with the token and its new value, shown this
 * once; the old value stops working. 422 NON_EDITABLE_ACCESS_TOKEN for the bootstrap token.
 */
export function regenerateAccessTokenRoute(
  deps: AccessTokenRouteDeps,
): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const change = await regenerateToken(deps.db, req.params.id);
    if (!change.ok) throw refusedChange(req.params.id, change);
    deps.tokens?.forget();
    res.json({ data: serializeAccessToken(change.token, change.value) });
  };
}
