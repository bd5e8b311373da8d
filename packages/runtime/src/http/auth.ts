import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ApiError, type Role } from '@herald/contract';
import { findTokenByHash, hashToken, type Queryable } from '@herald/store';
import { context } from './context.js';
import type { RateLimiter } from './rate-limit.js';

export interface Principal {
  tokenId: string;
  role: Role;
}

/**
 * Resolves bearer tokens to a principal: the admin bootstrap token from the environment, or a
 * stored token (by its SHA-256). Verified tokens are cached for `cacheTtlMs`, which bounds how
 * long a revoked token keeps working.
 */
export class TokenVerifier {
  readonly #bootstrapHash: Buffer | undefined;
  readonly #cache = new Map<string, { principal: Principal | null; expires: number }>();

  constructor(
    private readonly db: Queryable,
    options: { bootstrapAdminToken?: string | undefined; cacheTtlMs: number },
  ) {
    this.#bootstrapHash = options.bootstrapAdminToken
      ? Buffer.from(hashToken(options.bootstrapAdminToken), 'hex')
      : undefined;
    this.cacheTtlMs = options.cacheTtlMs;
  }

  private readonly cacheTtlMs: number;

  async verify(token: string): Promise<Principal | null> {
    const hash = hashToken(token);
    if (this.#bootstrapHash && timingSafeEqual(Buffer.from(hash, 'hex'), this.#bootstrapHash)) {
      return { tokenId: 'bootstrap', role: 'admin' };
    }
    const now = Date.now();
    const cached = this.#cache.get(hash);
    if (cached && cached.expires > now) return cached.principal;
    const record = await findTokenByHash(this.db, hash);
    const principal = record ? { tokenId: record.id, role: record.role } : null;
    if (this.cacheTtlMs > 0) {
      if (this.#cache.size >= 10_000) this.#cache.clear();
      this.#cache.set(hash, { principal, expires: now + this.cacheTtlMs });
    }
    return principal;
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
