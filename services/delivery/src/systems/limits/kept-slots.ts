import type { InFlightSlots } from './coordination.js';
import type { SlotRequest } from './in-flight.js';

/** A slot taken in the shared store: its token there, and when this process asked for it. */
interface StoreSlot {
  token: string;
  /** performance.now() before the store took it: the store's expiry is later than this + ttl. */
  askedAt: number;
}

export interface KeptSlotsOptions {
  /** Slots kept per webhook at most; 0 gives every slot back at once. */
  keep: number;
  /**
   * How long after it was asked for a slot may still start an attempt: the store's ttl less the
   * longest an attempt holds its slot (keptSlotsSettings).
   */
  reusableMs: number;
}

/**
 * How many of a webhook's slots a process keeps, and for how long, given the in-flight limit and
 * the store's ttl for a slot (`attemptMs`, the longest an attempt may hold one, plus `reusableMs`).
 * A quarter of the limit, so that slots kept idle here never take more than that from the other
 * processes; a limit under 4 keeps none, and behaves as if nothing were kept.
 */
export function keptSlotsSettings(
  limit: number,
  attemptMs: number,
): KeptSlotsOptions & { slotTtlMs: number } {
  const reusableMs = Math.min(2000, Math.max(100, Math.floor(attemptMs / 4)));
  return { keep: Math.floor(limit / 4), reusableMs, slotTtlMs: attemptMs + reusableMs };
}

/**
 * The in-flight slots with the slots a process frees kept for its next attempts of the same
 * webhook (#34's leased slots): an attempt that finds one kept here starts without asking Redis
 * (or Postgres), and its end keeps the slot again instead of giving it back. A webhook busy in
 * one process then costs the store nothing per attempt; a webhook that gets an event now and then
 * one round trip in several.
 *
 * The limit still holds across processes: a kept slot stays taken in the store, so the store
 * never counts more than `limit` slots held or kept, and the store's expiry of a slot still
 * outlasts every attempt that starts on it (an attempt starts on a kept slot only while it is
 * younger than `reusableMs`, and the store keeps a slot that long plus the longest attempt). What
 * keeping costs the other processes: at most `keep` of a webhook's slots per process, each for at
 * most `reusableMs` after it was taken, idle here while another process could have used it.
 */
export class KeptSlots implements InFlightSlots {
  /** Free slots by webhook, oldest first. */
  #kept = new Map<string, StoreSlot[]>();
  /** The store slot behind each slot an attempt here holds, by `webhookId token`. */
  #held = new Map<string, StoreSlot>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: InFlightSlots,
    private readonly options: KeptSlotsOptions,
  ) {}

  async acquire(webhookId: string, token: string): Promise<boolean> {
    const [taken] = await this.acquireMany([{ webhookId, token }]);
    return taken === true;
  }

  async acquireMany(requests: readonly SlotRequest[]): Promise<boolean[]> {
    const now = performance.now();
    const taken = requests.map(() => false);
    const asks: { index: number; request: SlotRequest }[] = [];
    const reused: SlotRequest[] = [];
    for (const [index, request] of requests.entries()) {
      const slot = this.#reuse(request.webhookId, now);
      if (slot) {
        this.#held.set(heldKey(request), slot);
        reused.push(request);
        taken[index] = true;
      } else {
        asks.push({ index, request });
      }
    }
    if (asks.length === 0) return taken;
    let answers: boolean[];
    try {
      answers = await this.store.acquireMany(asks.map(({ request }) => request));
    } catch (error) {
      // The caller gives up on all of them: the kept slots it was given are kept again.
      for (const request of reused) {
        const slot = this.#held.get(heldKey(request))!;
        this.#held.delete(heldKey(request));
        this.#keep(request.webhookId, slot);
      }
      throw error;
    }
    for (const [i, { index, request }] of asks.entries()) {
      if (!answers[i]) continue;
      taken[index] = true;
      this.#held.set(heldKey(request), { token: request.token, askedAt: now });
    }
    return taken;
  }

  release(webhookId: string, token: string): Promise<void> {
    const key = heldKey({ webhookId, token });
    const slot = this.#held.get(key);
    if (!slot) return this.store.release(webhookId, token);
    this.#held.delete(key);
    const kept = this.#kept.get(webhookId)?.length ?? 0;
    if (kept < this.options.keep && this.#reusable(slot, performance.now())) {
      this.#keep(webhookId, slot);
      return Promise.resolve();
    }
    return this.store.release(webhookId, slot.token);
  }

  /** Gives every kept slot back (the process stops). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    const all = [...this.#kept].flatMap(([webhookId, slots]) =>
      slots.map((slot) => ({ webhookId, slot })),
    );
    this.#kept.clear();
    await Promise.all(
      all.map(({ webhookId, slot }) =>
        this.store.release(webhookId, slot.token).catch(() => undefined),
      ),
    );
  }

  #reusable(slot: StoreSlot, now: number): boolean {
    return now - slot.askedAt < this.options.reusableMs;
  }

  /** The youngest kept slot of the webhook that may still start an attempt, if any. */
  #reuse(webhookId: string, now: number): StoreSlot | undefined {
    const slots = this.#kept.get(webhookId);
    const slot = slots?.pop();
    if (!slot) return undefined;
    if (slots!.length === 0) this.#kept.delete(webhookId);
    if (this.#reusable(slot, now)) return slot;
    // Too old to start one: it and every older one go back.
    this.#giveBack(webhookId, [slot, ...(slots ?? [])]);
    this.#kept.delete(webhookId);
    return undefined;
  }

  #keep(webhookId: string, slot: StoreSlot): void {
    const slots = this.#kept.get(webhookId) ?? [];
    slots.push(slot);
    slots.sort((a, b) => a.askedAt - b.askedAt);
    this.#kept.set(webhookId, slots);
    // Slots nobody here reused give themselves back once they could no longer start an attempt.
    this.#timer ??= setInterval(() => this.#sweep(), this.options.reusableMs / 4).unref();
  }

  #sweep(): void {
    const now = performance.now();
    for (const [webhookId, slots] of this.#kept) {
      const stale = slots.filter((slot) => !this.#reusable(slot, now));
      if (stale.length === 0) continue;
      const fresh = slots.filter((slot) => this.#reusable(slot, now));
      if (fresh.length > 0) this.#kept.set(webhookId, fresh);
      else this.#kept.delete(webhookId);
      this.#giveBack(webhookId, stale);
    }
    if (this.#kept.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** A release that fails (the store away) is left to the slot's expiry, as an attempt's is. */
  #giveBack(webhookId: string, slots: readonly StoreSlot[]): void {
    for (const slot of slots) this.store.release(webhookId, slot.token).catch(() => undefined);
  }
}

const heldKey = ({ webhookId, token }: SlotRequest): string => `${webhookId} ${token}`;
