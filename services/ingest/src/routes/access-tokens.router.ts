import { Router } from 'express';
import { requireRole } from '@herald/runtime';
import type { AccessTokenRouteDeps } from '../access-tokens/errors.js';
import { createAccessTokenRoute } from './access-tokens.create.js';
import { destroyAccessTokenRoute } from './access-tokens.destroy.js';
import { listAccessTokensRoute } from './access-tokens.list.js';
import { regenerateAccessTokenRoute } from './access-tokens.regenerate.js';
import { retrieveAccessTokenRoute } from './access-tokens.retrieve.js';
import { updateAccessTokenRoute } from './access-tokens.update.js';
import { listRolesRoute } from './roles.list.js';
import { retrieveRoleRoute } from './roles.retrieve.js';

/** /access_tokens and /roles (docs/api.md, Access tokens): admin only. */
export function accessTokensRouter(deps: AccessTokenRouteDeps): Router {
  const router = Router();
  const admin = requireRole();
  router.post('/access_tokens', admin, createAccessTokenRoute(deps));
  router.get('/access_tokens', admin, listAccessTokensRoute(deps));
  router.get('/access_tokens/:id', admin, retrieveAccessTokenRoute(deps));
  router.put('/access_tokens/:id', admin, updateAccessTokenRoute(deps));
  router.delete('/access_tokens/:id', admin, destroyAccessTokenRoute(deps));
  router.post('/access_tokens/:id/regenerate_token', admin, regenerateAccessTokenRoute(deps));
  router.get('/roles', admin, listRolesRoute());
  router.get('/roles/:id', admin, retrieveRoleRoute());
  return router;
}
