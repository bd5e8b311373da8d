import type { RequestHandler } from 'express';
import { ApiError } from '@herald/contract';
import {
  findEnvironment,
  findPrimaryEnvironment,
  type Environment,
  type Queryable,
} from '@herald/store';
import { context } from './context.js';

/**
 * Looks environments up with a short cache: known environments are remembered for `ttlMs`; an
 * unknown name is always asked again, so a newly created environment is usable at once.
 */
export class EnvironmentResolver {
  readonly #cache = new Map<string, { environment: Environment; expires: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs = 2000,
  ) {}

  async resolve(id: string | undefined): Promise<Environment | null> {
    const key = id ?? '';
    const cached = this.#cache.get(key);
    if (cached && cached.expires > Date.now()) return cached.environment;
    const environment =
      id === undefined ? await findPrimaryEnvironment(this.db) : await findEnvironment(this.db, id);
    if (environment && this.ttlMs > 0) {
      if (this.#cache.size > 1000) this.#cache.clear();
      this.#cache.set(key, { environment, expires: Date.now() + this.ttlMs });
    }
    return environment;
  }

  /** Forget cached environments (after an environment event changed them in this process). */
  invalidate(): void {
    this.#cache.clear();
  }
}

const ENVIRONMENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Selects the environment from X-Environment (absent → the primary one); unknown → 404. */
export function selectEnvironment(resolver: EnvironmentResolver): RequestHandler {
  return async (req, res, next) => {
    try {
      const header = req.headers['x-environment'];
      const requested = typeof header === 'string' ? header : undefined;
      const environment =
        requested === undefined || ENVIRONMENT_ID.test(requested)
          ? await resolver.resolve(requested)
          : null;
      if (!environment) {
        throw new ApiError('INVALID_ENVIRONMENT', {
          message: `Unknown environment ${JSON.stringify(requested ?? '(primary)')}`,
          environment: requested ?? null,
        });
      }
      context(res).environment = environment;
      res.setHeader('X-Environment', environment.id);
      next();
    } catch (error) {
      next(error);
    }
  };
}
