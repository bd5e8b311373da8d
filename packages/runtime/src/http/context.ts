import type { Response } from 'express';
import type { Role } from '@herald/contract';
import type { Environment } from '@herald/store';

/** What the plumbing learns about a request, kept on `res.locals`. */
export interface RequestContext {
  requestId: string;
  auth?: { tokenId: string; tokenName: string; role: Role };
  /** The code of the error answered, for the access log. */
  errorCode?: string;
  environment?: Environment;
  /** Parsed query string (Rack/PHP brackets, limits applied). */
  query: Record<string, unknown>;
}

export function context(res: Response): RequestContext {
  return res.locals as RequestContext;
}
