import {
  recordKey,
  StaleBatchContextError,
  writeItemBatchCommitted,
  type Db,
  type ExpectedContext,
  type NewEvent,
  type RecordText,
  type RecordWrite,
} from '@herald/store';

/** One request's one-statement write (writeItemBatch's input, its context always checked). */
export interface ItemBatchWrite {
  events: readonly NewEvent[];
  records: readonly RecordWrite[];
  texts: readonly RecordText[];
  expected: ExpectedContext;
}

/** What a request's write came to, once the commit that holds it returned. */
export interface GroupWritten {
  /** The request's event ids that this commit stored (not duplicates). */
  inserted: Set<string>;
  /**
   * Where the commit reached in the WAL, read once for the whole group in the write's round trip,
   * after its commit (the read-after token: docs/api.md, Read your own events).
   */
  position: Promise<bigint>;
}

interface Member {
  write: ItemBatchWrite;
  /** Its event ids and record keys: a group holds each once (see #fits). */
  keys: string[];
  resolve: (written: GroupWritten) => void;
  reject: (error: unknown) => void;
}

/** A group holds at most this many events (one request may hold more; it then goes alone). */
const GROUP_EVENTS_MAX = 1000;

/**
 * Group commit for POST /events's one-statement writes (writeItemBatch): requests that arrive
 * while the previous group's statement runs wait for it and then go together, as one statement
 * and one commit, so that N concurrent one-event requests pay one statement, one WAL flush and
 * one read of the commit position (in the statement's round trip) instead of N of each. At low
 * load a request finds no statement running and goes at once, alone: nothing waits on a timer.
 * The window is bounded by the statement before it, and a group by GROUP_EVENTS_MAX events.
 *
 * Each request still gets its answer only after the commit that holds its events, and only its
 * own ids. A group never holds the same event id or record twice (one statement can write a
 * record once): a request that repeats one waits for the next group. If the group's statement
 * fails, every request of it is written again alone, so a failing request fails alone; if the
 * context one of them was validated against changed (StaleBatchContextError), all of them are,
 * and each takes its full path again.
 */
export class GroupCommit {
  #waiting: Member[] = [];
  #writing = false;

  constructor(private readonly db: Db) {}

  write(write: ItemBatchWrite): Promise<GroupWritten> {
    const keys = [
      ...write.events.map((event) => `e ${event.id}`),
      ...write.records.map((record) => `r ${recordKey(record.environment, record.id)}`),
    ];
    const done = new Promise<GroupWritten>((resolve, reject) => {
      this.#waiting.push({ write, keys, resolve, reject });
    });
    this.#next();
    return done;
  }

  #next(): void {
    if (this.#writing || this.#waiting.length === 0) return;
    const group: Member[] = [];
    const rest: Member[] = [];
    const keys = new Set<string>();
    let events = 0;
    for (const member of this.#waiting) {
      const fits =
        (group.length === 0 || events + member.write.events.length <= GROUP_EVENTS_MAX) &&
        !member.keys.some((key) => keys.has(key));
      if (!fits) {
        rest.push(member);
        continue;
      }
      group.push(member);
      events += member.write.events.length;
      for (const key of member.keys) keys.add(key);
    }
    this.#waiting = rest;
    this.#writing = true;
    void this.#commit(group).finally(() => {
      this.#writing = false;
      this.#next();
    });
  }

  async #commit(group: readonly Member[]): Promise<void> {
    let inserted: Set<string>;
    let position: Promise<bigint>;
    try {
      const written = await writeItemBatchCommitted(
        this.db,
        group.length === 1 ? group[0]!.write : joined(group),
      );
      inserted = written.inserted;
      position = Promise.resolve(written.position);
    } catch (error) {
      if (group.length === 1 || error instanceof StaleBatchContextError) {
        for (const member of group) member.reject(error);
        return;
      }
      // One request's write may have failed them all: each goes again alone.
      await Promise.all(group.map((member) => this.#alone(member)));
      return;
    }
    for (const member of group) {
      const own = new Set(member.write.events.flatMap((e) => (inserted.has(e.id) ? [e.id] : [])));
      member.resolve({ inserted: own, position });
    }
  }

  async #alone(member: Member): Promise<void> {
    try {
      const { inserted, position } = await writeItemBatchCommitted(this.db, member.write);
      member.resolve({ inserted, position: Promise.resolve(position) });
    } catch (error) {
      member.reject(error);
    }
  }
}

/** The group's writes as one: their rows in order, their contexts joined. */
function joined(group: readonly Member[]): ItemBatchWrite {
  // Every request's expectations, each once: two requests that expect the same environment or
  // model differently cannot both hold, and the write then finds the context stale.
  const environments = new Map<string, ExpectedContext['environments'][number]>();
  const models = new Map<string, ExpectedContext['models'][number]>();
  for (const { write } of group) {
    for (const environment of write.expected.environments) {
      environments.set(JSON.stringify(environment), environment);
    }
    for (const model of write.expected.models) models.set(JSON.stringify(model), model);
  }
  return {
    events: group.flatMap((member) => member.write.events),
    records: group.flatMap((member) => member.write.records),
    texts: group.flatMap((member) => member.write.texts),
    expected: { environments: [...environments.values()], models: [...models.values()] },
  };
}
