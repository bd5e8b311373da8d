import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { asFailure, type ApiClient, type ApiFailure, type Collection } from './lib/api.js';
import type { Webhook } from './lib/types.js';

export interface Resource<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  /** Loads again; `quiet` keeps the current data on screen (auto-refresh). */
  reload: (quiet?: boolean) => void;
}

/**
 * Loads something whenever `deps` change, aborting what was in flight; keeps the last data while
 * reloading so that screens do not flash.
 */
export function useResource<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiFailure | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const quietRef = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const controller = new AbortController();
    if (!quietRef.current) setLoading(true);
    quietRef.current = false;
    loadRef.current(controller.signal).then(
      (value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return;
        setError(asFailure(failure));
        setLoading(false);
      },
    );
    return () => controller.abort();
    // The caller lists in `deps` what `load` reads.
  }, [...deps, generation]);

  const reload = useCallback((quiet = false) => {
    quietRef.current = quiet;
    setGeneration((value) => value + 1);
  }, []);
  return { data, error, loading, reload };
}

/** Something the user set off (a resend, a cancel…): busy while it runs, its failure kept to show. */
export interface Action {
  busy: boolean;
  error: ApiFailure | null;
  /** Runs `action`; a failure is kept in `error` rather than thrown. */
  run: (action: () => Promise<void>) => Promise<void>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (failure) {
      setError(asFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/** The environment's webhooks (GET /webhooks). */
/** Webhooks to choose from in a filter: the first page of 500 (GET /webhooks paged), not all. */
export const WEBHOOK_CHOICES = 500;
export function useWebhookChoices(client: ApiClient): Resource<Collection<Webhook>> {
  return useResource(
    (signal) =>
      client.get<Collection<Webhook>>('/webhooks', {
        signal,
        query: { page: { limit: String(WEBHOOK_CHOICES) } },
      }),
    [client],
  );
}

export function useWebhooks(client: ApiClient): Resource<Collection<Webhook>> {
  return useResource(
    (signal) => client.get<Collection<Webhook>>('/webhooks', { signal }),
    [client],
  );
}

/** `value`, once it has stopped changing for `delayMs`. */
export function useDebounced<T>(value: T, delayMs: number): T {
  const [debounced, setDebounced] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDebounced(value), delayMs);
    return () => clearTimeout(timer);
  }, [value, delayMs]);
  return debounced;
}

/** Calls `tick` every `intervalMs` while enabled and while the tab is visible. */
export function useInterval(tick: () => void, intervalMs: number, enabled: boolean): void {
  const tickRef = useRef(tick);
  tickRef.current = tick;
  useEffect(() => {
    if (!enabled) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') tickRef.current();
    }, intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs, enabled]);
}
