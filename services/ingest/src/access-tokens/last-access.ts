import type { AccessTokenResource } from '@herald/contract';

/** DatoCMS's `last_cma_access` values (docs/api.md, The access token resource). */
type LastAccess = AccessTokenResource['attributes']['last_cma_access'];

const DAY_MS = 86_400_000;

/** Days since 1970-01-01, UTC. */
const dayOf = (date: Date): number => Math.floor(date.getTime() / DAY_MS);
/** The day of the Monday that starts the date's week (1970-01-01 was a Thursday). */
const weekOf = (date: Date): number => dayOf(date) - ((dayOf(date) + 3) % 7);
const monthOf = (date: Date): number => date.getUTCFullYear() * 12 + date.getUTCMonth();

/**
 * When a token was last used, as DatoCMS says it: the first of today, yesterday, this week or
 * last week (Monday to Sunday), this month or last month that holds `usedAt`, in UTC; `never`
 * for no use, or none since the start of last month.
 */
export function lastAccess(usedAt: Date | null, now: Date): LastAccess {
  if (!usedAt) return 'never';
  const days = dayOf(now) - dayOf(usedAt);
  if (days <= 0) return 'today';
  if (days === 1) return 'yesterday';
  const weeks = (weekOf(now) - weekOf(usedAt)) / 7;
  if (weeks === 0) return 'this_week';
  if (weeks === 1) return 'last_week';
  const months = monthOf(now) - monthOf(usedAt);
  if (months === 0) return 'this_month';
  if (months === 1) return 'last_month';
  return 'never';
}
