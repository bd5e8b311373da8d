import type { RequestHandler } from 'express';
import { ApiError, type Role } from '@herald/contract';
import { findTokenByHash, hashToken, markTokenUsed, type Queryable } from '@herald/store';
import { context } from './context.js';
import type { RateLimiter } from './rate-limit.js';

export interface Principal {
  tokenId: string;
  /** The token's name, for the access log. */
  tokenName: string;
  role: Role;
}

/** How often a token's `last_used_at` is written at most (markTokenUsed). */
const MARK_USED_EVERY_MS = 60_000;

/**
 * Resolves bearer tokens to a principal by their SHA-256 among the stored tokens (the bootstrap
 * admin token among them: each HTTP process registers it at start). Verified tokens are cached
 * for `cacheTtlMs`, which bounds how long a token revoked by another process keeps working; the
 * token routes of this process call `forget()`, so their changes apply at once here.
 */
export class TokenVerifier {
  readonly #cache = new Map<string, { principal: Principal | null; expires: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly options: { cacheTtlMs: number },
  ) {}

  async verify(token: string): Promise<Principal | null> {
    const hash = hashToken(token);
    const now = Date.now();
    const cached = this.#cache.get(hash);
    if (cached && cached.expires > now) return cached.principal;
    const record = await findTokenByHash(this.db, hash);
    const principal = record
      ? { tokenId: record.id, tokenName: record.name, role: record.role }
      : null;
    if (record && (record.lastUsedAt?.getTime() ?? 0) < now - MARK_USED_EVERY_MS) {
      // Only informative (GET /access_tokens shows it): a failed mark must not refuse a request.
      await markTokenUsed(this.db, record.id).catch(() => undefined);
    }
    if (this.options.cacheTtlMs > 0) {
      if (this.#cache.size >= 10_000) this.#cache.clear();
      this.#cache.set(hash, { principal, expires: now + this.options.cacheTtlMs });
    }
    return principal;
  }

  /** Drops every cached verdict: a token was revoked, regenerated or given another role. */
  forget(): void {
    this.#cache.clear();
  }
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/**
 * 401 for a missing, malformed or unknown token; counts the request against the token's rate
 * limit (or the client address's when there is no valid token) and sets the X-RateLimit-* headers.
 */
export function authenticate(verifier: TokenVerifier, limiter: RateLimiter): RequestHandler {
  return async (req, res, next) => {
    try {
      const match = BEARER.exec(req.headers.authorization ?? '');
      const principal = match?.[1] ? await verifier.verify(match[1]) : null;
      if (!principal) {
        const result = await limiter.hit(
          `ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`,
          'anonymous',
        );
        if (result?.exceeded) throw rateLimited(result.resetSeconds);
        throw new ApiError('INVALID_AUTHORIZATION_HEADER', {
          message: match
            ? 'The API token is unknown or revoked'
            : 'Send an API token as "Authorization: Bearer <token>"',
        });
      }
      context(res).auth = principal;
      const result = await limiter.hit(`token:${principal.tokenId}`, principal.role);
      if (result) {
        res.setHeader('X-RateLimit-Limit', String(result.limit));
        res.setHeader('X-RateLimit-Remaining', String(result.remaining));
        if (result.exceeded) throw rateLimited(result.resetSeconds);
      }
      next();
    } catch (error) {
      next(error);
    }
  };
}

function rateLimited(resetSeconds: number): ApiError {
  return new ApiError(
    'RATE_LIMIT_EXCEEDED',
    { message: `Too many requests; retry in ${resetSeconds} s`, reset: resetSeconds },
    { headers: { 'X-RateLimit-Reset': String(resetSeconds), 'Retry-After': String(resetSeconds) } },
  );
}

/** 403 unless the token's role is one of `roles`; admin may do everything. */
export function requireRole(...roles: Role[]): RequestHandler {
  return (_req, res, next) => {
    const auth = context(res).auth;
    if (auth && (auth.role === 'admin' || roles.includes(auth.role))) return next();
    next(
      new ApiError('INSUFFICIENT_PERMISSIONS', {
        message: `This action needs one of the roles: ${['admin', ...roles].join(', ')}`,
        role: auth?.role ?? null,
      }),
    );
  };
}
