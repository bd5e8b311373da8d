import type { Response } from 'express';
import type { Role } from '@herald/contract';
import type { Environment } from '@herald/store';

/** What the plumbing learns about a request, kept on `res.locals`. */
export interface RequestContext {
  requestId: string;
  auth?: { tokenId: string; role: Role };
  environment?: Environment;
  /** Parsed query string (Rack/PHP brackets, limits applied). */
  query: Record<string, unknown>;
}

export function context(res: Response): RequestContext {
  return res.locals as RequestContext;
}
