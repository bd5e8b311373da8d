/** What a process's own match workers take in memory: event ids committed in this process. */
export interface LocalMatcher {
  /**
   * Takes these ids to match here, or says no (false: not running, its lease not valid, or its
   * backlog full), and the ids then go on the `event-match` queue as before.
   */
  offer(eventIds: readonly string[]): boolean;
}

/**
 * The hand-off between a process's ingest and its own match workers (the single process, where
 * both roles run): ids a commit stored are matched here, in memory, instead of making a round
 * trip through the `event-match` queue. Only what crosses processes goes on the queue. Postgres
 * stays the truth: ids handed off and then lost with the process (a crash before their match)
 * are events still unmatched, which the sweeper enqueues after EVENT_SWEEP_GRACE_MS, as it does
 * for a lost job. One per process (Infrastructure.localMatch); empty until the delivery role's
 * workers start, and again once they stop.
 */
export class LocalMatchHandOff {
  #matcher: LocalMatcher | undefined;

  /** The process's match workers take ids from now on; returns what detaches them. */
  attach(matcher: LocalMatcher): () => void {
    this.#matcher = matcher;
    return () => {
      if (this.#matcher === matcher) this.#matcher = undefined;
    };
  }

  /** Hands the ids to the match workers of this process, if they take them. */
  offer(eventIds: readonly string[]): boolean {
    return this.#matcher?.offer(eventIds) ?? false;
  }
}
