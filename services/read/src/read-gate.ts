import { ApiError } from '@herald/contract';
import {
  isStatementTimeoutError,
  type NamedStatement,
  type QueryResult,
  type Queryable,
  type Row,
} from '@herald/store';

export interface ReadLimits {
  /**
   * Statements of one token that may run at once in this process (READ_MAX_STATEMENTS_PER_TOKEN).
   * Further ones wait their turn; undefined: no limit.
   */
  statementsPerToken?: number | undefined;
  /** The read pool's statement_timeout (READ_STATEMENT_TIMEOUT_MS), for messages; 0: none. */
  statementTimeoutMs?: number | undefined;
  /**
   * How long a statement waits for its token's turn before the request answers 429. Default:
   * twice the statement timeout (a turn frees within one), or 10 s without one.
   */
  maxWaitMs?: number | undefined;
}

interface TokenSlots {
  running: number;
  waiting: (() => void)[];
}

/**
 * The read routes' way to the database: a share of the pool per token, and a time budget.
 *
 * Every statement of a request runs under its token's share: at most `statementsPerToken` at
 * once in this process, the rest waiting first come, first served. One client sending slow
 * listings in parallel thus holds at most that many of the pool's connections, and every other
 * client keeps the rest. A statement that Postgres cancels at the pool's statement_timeout is
 * answered 422 QUERY_TIMEOUT; one that waits longer than `maxWaitMs` for its turn, 429
 * RATE_LIMIT_EXCEEDED.
 */
export class ReadGate {
  readonly #slots = new Map<string, TokenSlots>();
  readonly #limit: number;
  readonly #timeoutMs: number;
  readonly #maxWaitMs: number;

  constructor(
    private readonly db: Queryable,
    limits: ReadLimits = {},
  ) {
    this.#limit = limits.statementsPerToken ?? Infinity;
    this.#timeoutMs = limits.statementTimeoutMs ?? 0;
    this.#maxWaitMs = limits.maxWaitMs ?? (this.#timeoutMs > 0 ? 2 * this.#timeoutMs : 10_000);
  }

  /** The database as one token's requests see it. */
  forToken(tokenId: string): Queryable {
    return {
      query: async <R extends Row = Row>(
        statement: string | NamedStatement,
        params?: readonly unknown[],
      ): Promise<QueryResult<R>> => {
        await this.#acquire(tokenId);
        try {
          return await this.db.query<R>(statement, params);
        } catch (error) {
          if (isStatementTimeoutError(error)) {
            throw new ApiError(
              'QUERY_TIMEOUT',
              {
                message: `The query ran longer than ${this.#timeoutMs} ms and was cancelled; narrow it (filter[type], filters on fields, a smaller page) or retry when the service is less busy`,
                timeout_ms: this.#timeoutMs,
              },
              { cause: error },
            );
          }
          throw error;
        } finally {
          this.#release(tokenId);
        }
      },
    };
  }

  async #acquire(tokenId: string): Promise<void> {
    let slots = this.#slots.get(tokenId);
    if (!slots) {
      slots = { running: 0, waiting: [] };
      this.#slots.set(tokenId, slots);
    }
    if (slots.running < this.#limit) {
      slots.running++;
      return;
    }
    const queue = slots.waiting;
    await new Promise<void>((resolve, reject) => {
      const turn = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(turn), 1);
        reject(
          new ApiError(
            'RATE_LIMIT_EXCEEDED',
            {
              message: `This token already runs ${this.#limit} read statements at once, its share of the database; retry in 1 s`,
              reset: 1,
              concurrent_statements: this.#limit,
            },
            { headers: { 'X-RateLimit-Reset': '1', 'Retry-After': '1' } },
          ),
        );
      }, this.#maxWaitMs);
      queue.push(turn);
    });
  }

  #release(tokenId: string): void {
    const slots = this.#slots.get(tokenId);
    if (!slots) return;
    const next = slots.waiting.shift();
    // The slot passes straight to the next waiter; `running` stays as it is.
    if (next) return next();
    slots.running--;
    if (slots.running === 0) this.#slots.delete(tokenId);
  }
}
