import { ApiError } from '@herald/contract';
import type { TokenVerifier } from '@herald/runtime';
import type { Db, TokenChange } from '@herald/store';

/** What the /access_tokens and /roles routes need. */
export interface AccessTokenRouteDeps {
  db: Db;
  /** The verifier the plumbing uses (shareApiState): forgotten after each change. */
  tokens?: TokenVerifier;
}

/** 404 in the envelope for an unknown (or revoked) token id. */
export function tokenNotFound(id: string): ApiError {
  return new ApiError('NOT_FOUND', { message: `No access token with id "${id}"`, id });
}

/** A refused change of a token as the error its case documents (TokenChange). */
export function refusedChange(
  id: string,
  change: Extract<TokenChange<object>, { ok: false }>,
): ApiError {
  switch (change.reason) {
    case 'not_found':
      return tokenNotFound(id);
    case 'last_admin':
      return new ApiError('LAST_ADMIN_TOKEN', {
        message:
          'This is the last active admin token: create another admin token before revoking or demoting this one',
        id,
      });
    case 'bootstrap':
      return new ApiError('NON_EDITABLE_ACCESS_TOKEN', {
        message:
          'The bootstrap admin token is configuration (HERALD_ADMIN_TOKEN or the admin-token file): change it there and restart; it can be revoked',
        id,
      });
  }
}
