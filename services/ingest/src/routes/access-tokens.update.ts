import type { RequestHandler } from 'express';
import { z } from 'zod';
import { AccessTokenName, AccessTokenResource, ApiError } from '@herald/contract';
import { findToken, updateToken } from '@herald/store';
import { accessTokensOperation, dataAnswer } from '../admin-api.js';
import {
  SurfaceFlags,
  accessTokenDocument,
  readAccessTokenDocument,
  readRoleLinkage,
} from '../access-tokens/document.js';
import {
  refusedChange,
  tokenNotFound,
  type AccessTokenRouteDeps,
} from '../access-tokens/errors.js';
import { serializeAccessToken } from '../access-tokens/serialize.js';
import { attributesError, parse } from '../validation/zod-errors.js';

const UpdateAttributes = z.object({ name: AccessTokenName.optional(), ...SurfaceFlags }).strict();

export const updateAccessTokenOperation = accessTokensOperation('put', '/access_tokens/{id}', {
  summary: 'Rename a token or change its role',
  body: { schema: accessTokenDocument(UpdateAttributes), required: true },
  responses: { 200: dataAnswer('The token', AccessTokenResource) },
  errors: [
    'NOT_FOUND',
    'INVALID_FORMAT',
    'INVALID_ATTRIBUTES',
    'LAST_ADMIN_TOKEN',
    'NON_EDITABLE_ACCESS_TOKEN',
  ],
});

/**
 * PUT /access_tokens/:id → 200: a new name and/or role (relationships.role; absent keeps it).
 * 404 before any attribute error; 422 LAST_ADMIN_TOKEN for demoting the last admin token,
 * NON_EDITABLE_ACCESS_TOKEN for the bootstrap one.
 */
export function updateAccessTokenRoute(deps: AccessTokenRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const { id } = req.params;
    const document = readAccessTokenDocument(req.body, id);
    if (!(await findToken(deps.db, id))) throw tokenNotFound(id);
    const parsed = parse(UpdateAttributes, document.attributes);
    if (parsed.issues)
      throw attributesError(parsed.issues, document.attributes, 'for an access token');
    let role;
    if (document.role !== undefined) {
      const linkage = readRoleLinkage(document.role);
      if ('problem' in linkage) throw ApiError.many([linkage.problem]);
      role = linkage.role;
    }
    const change = await updateToken(deps.db, id, { name: parsed.value.name, role });
    if (!change.ok) throw refusedChange(id, change);
    deps.tokens?.forget();
    res.json({ data: serializeAccessToken(change.token) });
  };
}
