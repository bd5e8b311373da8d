import type { Role } from '@herald/contract';
import type { Coordination } from '../coordination.js';

export interface RateLimits {
  windowMs: number;
  perRole: Record<Role, number>;
  anonymous: number;
}

export interface RateLimitResult {
  limit: number;
  remaining: number;
  /** Seconds until the window resets, ≥ 1. */
  resetSeconds: number;
  exceeded: boolean;
}

/** The most requests one lease lets a process answer without asking the coordination store (Redis or Postgres). */
export const RATE_LIMIT_LEASE_MAX = 100;
/** A lease takes at most this fraction of what the window has left: near the limit, one. */
const RATE_LIMIT_LEASE_SHARE = 1 / 16;
/** Keys whose lease a process keeps at most (a flood of client addresses cannot grow it more). */
const LEASES_MAX = 10_000;

/** What a process holds of one key's window. */
interface Lease {
  /** Requests of the lease not answered yet. */
  left: number;
  /** The window's count in the store when the lease was granted (this lease included). */
  counted: number;
  /** Local time by which the window has ended in the store (its TTL, from before the ask). */
  endsAt: number;
}

/**
 * Counts requests in the coordination store (Redis, or Postgres alone) so the limit holds across
 * replicas, in leases: a process asks the store
 * for up to RATE_LIMIT_LEASE_MAX requests at once (at most RATE_LIMIT_LEASE_SHARE of what the
 * window has left, so one at a time near the limit) and answers them from memory until the lease
 * is spent or the window ends. The store never grants past the limit, so the processes together
 * never let more than the limit through in a window; the cost is on the other side: requests a
 * process leased and did not use are lost to the others until the window ends (at most one
 * lease per process, RATE_LIMIT_LEASE_MAX and 1/16 of the window's room when it was taken). A
 * window found full is remembered until it ends: refusals need no round trip either.
 *
 * When the store is unreachable and the process holds no lease, the request is let through (returns
 * undefined): rate limiting must not turn an outage into refusals of work that Postgres can
 * still accept.
 */
export class RateLimiter {
  readonly #leases = new Map<string, Lease>();
  /**
   * A key's ask to the store in flight (one at a time): requests meanwhile wait for its lease. It
   * resolves false when the store did not answer.
   */
  readonly #asking = new Map<string, Promise<boolean>>();

  constructor(
    private readonly coordination: Pick<Coordination, 'leaseRequests'>,
    private readonly limits: RateLimits,
    private readonly prefix: string,
  ) {}

  limitFor(role: Role | 'anonymous'): number {
    return role === 'anonymous' ? this.limits.anonymous : this.limits.perRole[role];
  }

  async hit(key: string, role: Role | 'anonymous'): Promise<RateLimitResult | undefined> {
    const limit = this.limitFor(role);
    for (;;) {
      const held = this.#fromLease(key, limit);
      if (held) return held;
      const asking = this.#asking.get(key);
      if (!asking) break;
      // The store did not answer the ask: let this request through too, as the asker's was.
      if (!(await asking)) return undefined;
    }
    let settle!: (leased: boolean) => void;
    this.#asking.set(key, new Promise((resolve) => (settle = resolve)));
    try {
      const result = await this.#ask(key, limit);
      settle(result !== undefined);
      return result;
    } finally {
      this.#asking.delete(key);
    }
  }

  /** The answer from the lease held for `key`, if it holds one for this request. */
  #fromLease(key: string, limit: number): RateLimitResult | undefined {
    const lease = this.#leases.get(key);
    if (!lease) return undefined;
    const now = Date.now();
    if (lease.endsAt <= now) {
      this.#leases.delete(key);
      return undefined;
    }
    const resetSeconds = Math.max(1, Math.ceil((lease.endsAt - now) / 1000));
    if (lease.counted > limit) return { limit, remaining: 0, resetSeconds, exceeded: true };
    if (lease.left === 0) return undefined;
    lease.left--;
    return { limit, remaining: limit - lease.counted + lease.left, resetSeconds, exceeded: false };
  }

  async #ask(key: string, limit: number): Promise<RateLimitResult | undefined> {
    const asked = Date.now();
    let reply: { counted: number; ttlMs: number; granted: number };
    try {
      reply = await this.coordination.leaseRequests(
        `${this.prefix}${key}`,
        this.limits.windowMs,
        limit,
        RATE_LIMIT_LEASE_MAX,
        RATE_LIMIT_LEASE_SHARE,
      );
    } catch {
      return undefined;
    }
    const { counted, ttlMs: ttl, granted: grant } = reply;
    const exceeded = counted > limit;
    // The lease, minus this request; none when the window is full (the refusal is remembered).
    const left = exceeded ? 0 : grant - 1;
    if (!this.#leases.has(key) && this.#leases.size >= LEASES_MAX) this.#prune();
    this.#leases.set(key, { left, counted, endsAt: asked + ttl });
    return {
      limit,
      remaining: exceeded ? 0 : limit - counted + left,
      resetSeconds: Math.max(1, Math.ceil(ttl / 1000)),
      exceeded,
    };
  }

  /** Drops the leases of ended windows, or all of them if that is not enough. */
  #prune(): void {
    const now = Date.now();
    for (const [key, lease] of this.#leases) if (lease.endsAt <= now) this.#leases.delete(key);
    if (this.#leases.size >= LEASES_MAX) this.#leases.clear();
  }
}
