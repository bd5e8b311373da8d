import type { RequestHandler } from 'express';
import { z } from 'zod';
import { AccessTokenName, AccessTokenResource, ApiError, type ErrorEntry } from '@herald/contract';
import { createToken } from '@herald/store';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import {
  SurfaceFlags,
  accessTokenDocument,
  readAccessTokenDocument,
  readRoleLinkage,
} from '../access-tokens/document.js';
import type { AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';
import { attributesError, parse } from '../validation/zod-errors.js';

const CreateAttributes = z.object({ name: AccessTokenName, ...SurfaceFlags }).strict();

export const createAccessTokenOperation = accessTokensOperation('post', '/access_tokens', {
  summary: 'Create an API token',
  body: { schema: accessTokenDocument(CreateAttributes), required: true },
  responses: { 201: dataAnswer('The token, its value in `token` this once', AccessTokenResource) },
  errors: ['INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
});

/**
 * POST /access_tokens → 201 with the token, its value in `token` this once (docs/api.md, Access
 * tokens): only a hash of it is kept.
 */
export function createAccessTokenRoute(deps: AccessTokenRouteDeps): RequestHandler {
  return async (req, res) => {
    const document = readAccessTokenDocument(req.body);
    const parsed = parse(CreateAttributes, document.attributes);
    const linkage = readRoleLinkage(document.role);
    const roleProblems: ErrorEntry[] = 'problem' in linkage ? [linkage.problem] : [];
    if (parsed.issues) {
      const error = attributesError(parsed.issues, document.attributes, 'for an access token');
      throw ApiError.many([...error.entries, ...roleProblems]);
    }
    if ('problem' in linkage) throw ApiError.many(roleProblems);
    const { token, record } = await createToken(deps.db, {
      name: parsed.value.name,
      role: linkage.role,
    });
    res.status(201).json({ data: serializeAccessToken(record, token) });
  };
}
