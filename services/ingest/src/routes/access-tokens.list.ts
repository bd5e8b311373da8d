import type { RequestHandler } from 'express';
import { z } from 'zod';
import { AccessTokenResource } from '@herald/contract';
import { context } from '@herald/runtime';
import { listTokens } from '@herald/store';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import type { AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';
import { parseQuery } from '../validation/query-params.js';

export const listAccessTokensOperation = accessTokensOperation('get', '/access_tokens', {
  summary: 'Every active token, oldest first',
  responses: { 200: dataAnswer('The tokens, without their values', z.array(AccessTokenResource)) },
});

/** GET /access_tokens → 200: every active token, the bootstrap one included, oldest first. */
export function listAccessTokensRoute(deps: AccessTokenRouteDeps): RequestHandler {
  return async (_req, res) => {
    parseQuery(z.object({}).strict(), context(res).query);
    const tokens = await listTokens(deps.db);
    res.json({ data: tokens.map((token) => serializeAccessToken(token)) });
  };
}
