import type { RequestHandler } from 'express';
import { AccessTokenResource } from '@herald/contract';
import { findToken } from '@herald/store';
import { accessTokensOperation, answerFound, dataAnswer } from '../admin-api.js';
import { tokenNotFound, type AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';

export const retrieveAccessTokenOperation = accessTokensOperation('get', '/access_tokens/{id}', {
  summary: 'One token',
  responses: { 200: dataAnswer('The token', AccessTokenResource) },
  errors: ['NOT_FOUND'],
});

/** GET /access_tokens/:id → 200 without the value (only its hint), or 404. */
export function retrieveAccessTokenRoute(
  deps: AccessTokenRouteDeps,
): RequestHandler<{ id: string }> {
  return answerFound((id) => findToken(deps.db, id), tokenNotFound, serializeAccessToken);
}
